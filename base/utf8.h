// Text helpers shared by the JSON writer and parser: UTF-8 as Python's json
// module and the official log parser see it (a byte that starts no valid
// sequence stands for itself, a latin-1 code point).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace mlperf::json {

// Decodes the UTF-8 sequence at s[i] and advances i past it; a byte that
// starts no valid sequence is returned as itself (a latin-1 code point).
uint32_t NextCodePoint(std::string_view s, size_t& i);

// Appends cp as UTF-8; lone surrogates are kept (as Python keeps them), WTF-8 style.
void AppendUtf8(uint32_t cp, std::string& out);

// Whether every byte of s belongs to a valid UTF-8 sequence.
bool IsValidUtf8(std::string_view s);

// A byte a JSON string carries as is: printable ASCII other than '"' and '\\'.
inline bool IsPlainAscii(unsigned char c) { return c >= 0x20 && c < 0x7F && c != '"' && c != '\\'; }

}  // namespace mlperf::json
