#include "reference/io/torch_checkpoint.h"

#include <cstring>
#include <fstream>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "base/files.h"
#include "fmt/format.h"
#include "reference/core/dtype.h"

namespace mlperf::io {
namespace {

constexpr uint64_t kMaxBytes = uint64_t{64} << 30;
// The legacy format's first pickle: this number.
constexpr char kLegacyMagic[] = "\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";

struct Value;
using Ref = std::shared_ptr<Value>;

// What a state dict's pickle holds.
struct Value {
  enum Kind { kNone, kInt, kFloat, kString, kTuple, kList, kDict, kGlobal, kStorage, kTensor };
  Kind kind = kNone;
  int64_t i = 0;
  double f = 0;
  std::string s;           // string (bytes for a long LONG1); global "module name"; storage key
  std::string dtype;       // storage and tensor: "Float", ...
  std::vector<Ref> items;  // tuple, list; dict as key, value, key, value ...
  int64_t offset = 0;      // tensor: in elements of its storage
  std::vector<int64_t> shape, stride;
};

Ref Make(Value::Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}

absl::Status Bad(const std::string& path, const std::string& why) {
  return absl::InvalidArgumentError(fmt::format("{}: {}", path, why));
}

int ElementSize(const std::string& dtype) {
  if (dtype == "Float" || dtype == "Int") return 4;
  if (dtype == "Half" || dtype == "BFloat16" || dtype == "Short") return 2;
  if (dtype == "Double" || dtype == "Long") return 8;
  if (dtype == "Byte" || dtype == "Char" || dtype == "Bool") return 1;
  return 0;
}

// The pickle machine over bytes [at, end); on success `at` is past STOP.
class Unpickler {
 public:
  Unpickler(const std::string& path, std::string_view bytes, size_t at)
      : path_(path), b_(bytes), at_(at) {}

  absl::StatusOr<Ref> Run() {
    while (true) {
      if (at_ >= b_.size()) return Bad(path_, "the pickle ends before STOP");
      const auto op = static_cast<uint8_t>(b_[at_++]);
      absl::Status s = Step(op);
      if (!s.ok()) return s;
      if (op == '.') {
        if (stack_.size() != 1) return Bad(path_, "the pickle leaves no single value");
        return stack_.back();
      }
    }
  }
  size_t position() const { return at_; }

 private:
  absl::StatusOr<uint64_t> Unsigned(int n) {
    if (at_ + n > b_.size()) return Bad(path_, "the pickle is cut short");
    uint64_t v = 0;
    for (int k = 0; k < n; ++k)
      v |= static_cast<uint64_t>(static_cast<uint8_t>(b_[at_ + k])) << (8 * k);
    at_ += n;
    return v;
  }
  absl::StatusOr<std::string> Bytes(uint64_t n) {
    if (at_ + n > b_.size()) return Bad(path_, "the pickle is cut short");
    std::string s(b_.substr(at_, n));
    at_ += n;
    return s;
  }
  absl::StatusOr<std::string> Line() {
    const size_t end = b_.find('\n', at_);
    if (end == std::string_view::npos) return Bad(path_, "the pickle is cut short");
    std::string s(b_.substr(at_, end - at_));
    at_ = end + 1;
    return s;
  }
  absl::StatusOr<Ref> Pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() == marks_.back()))
      return Bad(path_, "the pickle pops an empty stack");
    Ref v = stack_.back();
    stack_.pop_back();
    return v;
  }
  absl::StatusOr<std::vector<Ref>> PopToMark() {
    if (marks_.empty()) return Bad(path_, "the pickle has no mark");
    std::vector<Ref> items(stack_.begin() + static_cast<std::ptrdiff_t>(marks_.back()),
                           stack_.end());
    stack_.resize(marks_.back());
    marks_.pop_back();
    return items;
  }
  void Push(Ref v) { stack_.push_back(std::move(v)); }
  Ref String(std::string s) {
    Ref v = Make(Value::kString);
    v->s = std::move(s);
    return v;
  }
  Ref Int(int64_t i) {
    Ref v = Make(Value::kInt);
    v->i = i;
    return v;
  }
  Ref Tuple(std::vector<Ref> items) {
    Ref v = Make(Value::kTuple);
    v->items = std::move(items);
    return v;
  }

  absl::Status Step(uint8_t op);
  absl::StatusOr<Ref> Reduce(const Ref& callable, const Ref& args);
  absl::StatusOr<Ref> Storage(const Ref& pid);

  const std::string& path_;
  std::string_view b_;
  size_t at_;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Ref> memo_;
};

#define TC_ASSIGN(lhs, expr)                    \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = std::move(*lhs##_or)

absl::Status Unpickler::Step(uint8_t op) {
  switch (op) {
    case 0x80: {  // PROTO
      TC_ASSIGN(protocol, Unsigned(1));
      if (protocol > 5) return Bad(path_, fmt::format("pickle protocol {}", protocol));
      return absl::OkStatus();
    }
    case 0x95: {  // FRAME
      TC_ASSIGN(size, Unsigned(8));
      (void)size;
      return absl::OkStatus();
    }
    case 'c': {  // GLOBAL
      TC_ASSIGN(module, Line());
      TC_ASSIGN(name, Line());
      Ref v = Make(Value::kGlobal);
      v->s = module + " " + name;
      Push(v);
      return absl::OkStatus();
    }
    case 0x93: {  // STACK_GLOBAL
      TC_ASSIGN(name, Pop());
      TC_ASSIGN(module, Pop());
      Ref v = Make(Value::kGlobal);
      v->s = module->s + " " + name->s;
      Push(v);
      return absl::OkStatus();
    }
    case 'q':
    case 'r':
    case 0x94: {  // BINPUT, LONG_BINPUT, MEMOIZE
      uint64_t key = memo_.size();
      if (op != 0x94) {
        TC_ASSIGN(k, Unsigned(op == 'q' ? 1 : 4));
        key = k;
      }
      if (stack_.empty()) return Bad(path_, "the pickle memoizes nothing");
      memo_[key] = stack_.back();
      return absl::OkStatus();
    }
    case 'h':
    case 'j': {  // BINGET, LONG_BINGET
      TC_ASSIGN(key, Unsigned(op == 'h' ? 1 : 4));
      auto it = memo_.find(key);
      if (it == memo_.end()) return Bad(path_, "the pickle reads an empty memo slot");
      Push(it->second);
      return absl::OkStatus();
    }
    case '(':
      marks_.push_back(stack_.size());
      return absl::OkStatus();
    case ')':
      Push(Tuple({}));
      return absl::OkStatus();
    case 't': {
      TC_ASSIGN(items, PopToMark());
      Push(Tuple(std::move(items)));
      return absl::OkStatus();
    }
    case 0x85:
    case 0x86:
    case 0x87: {  // TUPLE1..3
      std::vector<Ref> items(op - 0x84);
      for (size_t k = items.size(); k-- > 0;) {
        TC_ASSIGN(v, Pop());
        items[k] = v;
      }
      Push(Tuple(std::move(items)));
      return absl::OkStatus();
    }
    case ']':
      Push(Make(Value::kList));
      return absl::OkStatus();
    case '}':
      Push(Make(Value::kDict));
      return absl::OkStatus();
    case 'a': {  // APPEND
      TC_ASSIGN(v, Pop());
      if (stack_.empty() || stack_.back()->kind != Value::kList)
        return Bad(path_, "APPEND to no list");
      stack_.back()->items.push_back(v);
      return absl::OkStatus();
    }
    case 'e': {  // APPENDS
      TC_ASSIGN(items, PopToMark());
      if (stack_.empty() || stack_.back()->kind != Value::kList)
        return Bad(path_, "APPENDS to no list");
      for (Ref& v : items) stack_.back()->items.push_back(v);
      return absl::OkStatus();
    }
    case 's':
    case 'u': {  // SETITEM, SETITEMS
      std::vector<Ref> items;
      if (op == 's') {
        TC_ASSIGN(value, Pop());
        TC_ASSIGN(key, Pop());
        items = {key, value};
      } else {
        TC_ASSIGN(popped, PopToMark());
        items = std::move(popped);
      }
      if (stack_.empty() || stack_.back()->kind != Value::kDict || items.size() % 2 != 0)
        return Bad(path_, "SETITEMS to no dict");
      for (Ref& v : items) stack_.back()->items.push_back(v);
      return absl::OkStatus();
    }
    case 'X':
    case 0x8c:
    case 0x8d:
    case 'U':
    case 'T':
    case 'B':
    case 'C': {  // strings and bytes
      const int n = op == 0x8c || op == 'U' || op == 'C' ? 1 : op == 0x8d ? 8 : 4;
      TC_ASSIGN(size, Unsigned(n));
      TC_ASSIGN(text, Bytes(size));
      Push(String(std::move(text)));
      return absl::OkStatus();
    }
    case 'K':
    case 'M': {  // BININT1, BININT2
      TC_ASSIGN(v, Unsigned(op == 'K' ? 1 : 2));
      Push(Int(static_cast<int64_t>(v)));
      return absl::OkStatus();
    }
    case 'J': {  // BININT
      TC_ASSIGN(v, Unsigned(4));
      Push(Int(static_cast<int32_t>(static_cast<uint32_t>(v))));
      return absl::OkStatus();
    }
    case 0x8a: {  // LONG1: little-endian two's complement
      TC_ASSIGN(n, Unsigned(1));
      TC_ASSIGN(raw, Bytes(n));
      Ref v = Make(Value::kInt);
      v->s = raw;
      if (n <= 8) {
        uint64_t u = 0;
        for (size_t k = 0; k < n; ++k)
          u |= static_cast<uint64_t>(static_cast<uint8_t>(raw[k])) << (8 * k);
        if (n > 0 && n < 8 && (static_cast<uint8_t>(raw[n - 1]) & 0x80))
          u |= ~uint64_t{0} << (8 * n);
        v->i = static_cast<int64_t>(u);
      }
      Push(v);
      return absl::OkStatus();
    }
    case 'G': {  // BINFLOAT, big-endian
      TC_ASSIGN(raw, Bytes(8));
      uint64_t u = 0;
      for (int k = 0; k < 8; ++k) u = (u << 8) | static_cast<uint8_t>(raw[k]);
      Ref v = Make(Value::kFloat);
      std::memcpy(&v->f, &u, 8);
      Push(v);
      return absl::OkStatus();
    }
    case 'N':
      Push(Make(Value::kNone));
      return absl::OkStatus();
    case 0x88:
    case 0x89:
      Push(Int(op == 0x88 ? 1 : 0));
      return absl::OkStatus();
    case 'Q': {  // BINPERSID
      TC_ASSIGN(pid, Pop());
      TC_ASSIGN(storage, Storage(pid));
      Push(storage);
      return absl::OkStatus();
    }
    case 'R': {  // REDUCE
      TC_ASSIGN(args, Pop());
      TC_ASSIGN(callable, Pop());
      TC_ASSIGN(result, Reduce(callable, args));
      Push(result);
      return absl::OkStatus();
    }
    case 'b': {  // BUILD: a state dict's _metadata, not needed
      TC_ASSIGN(state, Pop());
      (void)state;
      if (stack_.empty()) return Bad(path_, "BUILD of nothing");
      return absl::OkStatus();
    }
    case '.':
      return absl::OkStatus();
    default:
      return Bad(path_, fmt::format("pickle opcode 0x{:02x} is not one a state dict uses", op));
  }
}

absl::StatusOr<Ref> Unpickler::Storage(const Ref& pid) {
  // ('storage', torch.<T>Storage, key, location, numel[, view])
  if (pid->kind != Value::kTuple || pid->items.size() < 5 || pid->items[0]->s != "storage" ||
      pid->items[1]->kind != Value::kGlobal)
    return Bad(path_, "a persistent id that is no storage");
  const std::string& type = pid->items[1]->s;  // "torch FloatStorage"
  constexpr std::string_view kPrefix = "torch ", kSuffix = "Storage";
  if (type.rfind(kPrefix, 0) != 0 || type.size() < kPrefix.size() + kSuffix.size() ||
      type.compare(type.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
    return Bad(path_, fmt::format("storage type {}", type));
  Ref v = Make(Value::kStorage);
  v->dtype = type.substr(kPrefix.size(), type.size() - kPrefix.size() - kSuffix.size());
  v->s = pid->items[2]->s;
  v->i = pid->items[4]->i;  // elements
  if (pid->items.size() > 5 && pid->items[5]->kind != Value::kNone)
    return Bad(path_, "a storage view (torch < 0.4 checkpoints) is not read");
  return v;
}

absl::StatusOr<Ref> Unpickler::Reduce(const Ref& callable, const Ref& args) {
  if (callable->kind != Value::kGlobal || args->kind != Value::kTuple)
    return Bad(path_, "REDUCE of no global");
  const std::string& f = callable->s;
  if (f == "collections OrderedDict") return Make(Value::kDict);
  if (f == "torch._utils _rebuild_parameter" && !args->items.empty()) return args->items[0];
  if (f == "torch._utils _rebuild_tensor_v2" || f == "torch._utils _rebuild_tensor") {
    const auto& a = args->items;
    if (a.size() < 4 || a[0]->kind != Value::kStorage || a[2]->kind != Value::kTuple ||
        a[3]->kind != Value::kTuple)
      return Bad(path_, "a tensor without its storage, size and stride");
    Ref t = Make(Value::kTensor);
    t->s = a[0]->s;
    t->dtype = a[0]->dtype;
    t->i = a[0]->i;  // the storage's elements
    t->offset = a[1]->i;
    for (const Ref& d : a[2]->items) t->shape.push_back(d->i);
    for (const Ref& d : a[3]->items) t->stride.push_back(d->i);
    return t;
  }
  return Bad(path_, fmt::format("the pickle calls {}, which no state dict needs", f));
}

struct ZipEntry {
  size_t begin = 0, size = 0;
};

absl::StatusOr<std::map<std::string, ZipEntry>> ZipDirectory(const std::string& path,
                                                             std::string_view b) {
  auto u16 = [&](size_t at) {
    return static_cast<uint32_t>(static_cast<uint8_t>(b[at])) |
           static_cast<uint32_t>(static_cast<uint8_t>(b[at + 1])) << 8;
  };
  auto u32 = [&](size_t at) { return u16(at) | u16(at + 2) << 16; };
  if (b.size() < 22) return Bad(path, "a zip too short for its directory");
  // The end record sits in the last 22 + 65,535 bytes (its comment's most).
  size_t eocd = std::string_view::npos;
  const size_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  for (size_t at = b.size() - 22 + 1; at-- > lowest;)
    if (u32(at) == 0x06054b50) {
      eocd = at;
      break;
    }
  if (eocd == std::string_view::npos) return Bad(path, "no zip directory");
  const uint32_t count = u16(eocd + 10), dir = u32(eocd + 16);
  if (dir == 0xFFFFFFFFu || count == 0xFFFF)
    return Bad(path, "a zip64 archive (over 4 GiB) is not read");
  std::map<std::string, ZipEntry> entries;
  size_t at = dir;
  for (uint32_t k = 0; k < count; ++k) {
    if (at + 46 > b.size() || u32(at) != 0x02014b50) return Bad(path, "a broken zip directory");
    const uint32_t method = u16(at + 10), size = u32(at + 20), name_len = u16(at + 28),
                   extra = u16(at + 30), comment = u16(at + 32), local = u32(at + 42);
    if (at + 46 + name_len > b.size()) return Bad(path, "a broken zip directory");
    const std::string name(b.substr(at + 46, name_len));
    if (method != 0) return Bad(path, fmt::format("{} is compressed; torch.save stores", name));
    if (local + 30 > b.size() || u32(local) != 0x04034b50) return Bad(path, "a broken zip entry");
    const size_t begin = local + 30 + u16(local + 26) + u16(local + 28);
    if (begin + size > b.size()) return Bad(path, fmt::format("{} runs past the file's end", name));
    entries[name] = {begin, size};
    at += 46 + name_len + extra + comment;
  }
  return entries;
}

}  // namespace

bool LooksLikeTorchCheckpoint(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char head[2] = {0, 0};
  f.read(head, 2);
  return f.gcount() == 2 && ((head[0] == 'P' && head[1] == 'K') ||
                             (static_cast<uint8_t>(head[0]) == 0x80 && head[1] == 2));
}

absl::StatusOr<TorchCheckpoint> TorchCheckpoint::Read(const std::string& path) {
  TorchCheckpoint out;
  out.path_ = path;
  absl::StatusOr<std::string> bytes = base::ReadSmallFile(path, kMaxBytes);
  if (!bytes.ok()) return bytes.status();
  out.bytes_ = std::move(*bytes);
  const std::string_view b = out.bytes_;
  // Where each storage's bytes begin, by key.
  std::map<std::string, size_t> storages;
  Ref root;
  if (b.size() >= 4 && b.substr(0, 2) == "PK") {
    TC_ASSIGN(entries, ZipDirectory(path, b));
    std::string prefix;
    for (const auto& [name, e] : entries)
      if (name.size() >= 8 && name.compare(name.size() - 8, 8, "data.pkl") == 0)
        prefix = name.substr(0, name.size() - 8);
    if (entries.count(prefix + "data.pkl") == 0) return Bad(path, "a zip without data.pkl");
    const ZipEntry pkl = entries[prefix + "data.pkl"];
    Unpickler u(path, b.substr(0, pkl.begin + pkl.size), pkl.begin);
    TC_ASSIGN(r, u.Run());
    root = r;
    for (const auto& [name, e] : entries)
      if (name.rfind(prefix + "data/", 0) == 0) storages[name.substr(prefix.size() + 5)] = e.begin;
  } else {
    // Magic number, protocol, system info, the state dict, its storage keys.
    size_t at = 0;
    std::vector<Ref> pickles;
    for (int k = 0; k < 5; ++k) {
      Unpickler u(path, b, at);
      TC_ASSIGN(r, u.Run());
      pickles.push_back(r);
      at = u.position();
    }
    if (pickles[0]->kind != Value::kInt || pickles[0]->s != std::string(kLegacyMagic, 10))
      return Bad(path, "neither a zip nor a legacy PyTorch checkpoint (no magic number)");
    root = pickles[3];
    if (pickles[4]->kind != Value::kList) return Bad(path, "no storage keys after the pickle");
    // Each storage: its element count (8 bytes), then its bytes.
    std::map<std::string, std::string> dtype_of;
    std::vector<Ref> pending{root};
    while (!pending.empty()) {  // the tensors' storages' types, by key
      Ref v = pending.back();
      pending.pop_back();
      if (v->kind == Value::kTensor) dtype_of[v->s] = v->dtype;
      for (const Ref& c : v->items) pending.push_back(c);
    }
    for (const Ref& key : pickles[4]->items) {
      if (at + 8 > b.size()) return Bad(path, "storages cut short");
      uint64_t n = 0;
      for (int k = 0; k < 8; ++k)
        n |= static_cast<uint64_t>(static_cast<uint8_t>(b[at + k])) << (8 * k);
      at += 8;
      const int size = ElementSize(dtype_of.count(key->s) ? dtype_of[key->s] : "");
      if (size == 0) return Bad(path, fmt::format("storage {} of an unknown type", key->s));
      storages[key->s] = at;
      at += n * static_cast<uint64_t>(size);
      if (at > b.size()) return Bad(path, "storages cut short");
    }
  }
  // A state dict, possibly inside {"state_dict": ...}.
  if (root->kind == Value::kDict)
    for (size_t k = 0; k + 1 < root->items.size(); k += 2)
      if (root->items[k]->s == "state_dict" && root->items[k + 1]->kind == Value::kDict)
        root = root->items[k + 1];
  if (root->kind != Value::kDict) return Bad(path, "the pickle holds no dict of tensors");
  for (size_t k = 0; k + 1 < root->items.size(); k += 2) {
    const Ref &key = root->items[k], &t = root->items[k + 1];
    if (key->kind != Value::kString || t->kind != Value::kTensor) continue;
    const int size = ElementSize(t->dtype);
    if (size == 0) return Bad(path, fmt::format("{}: storage type {}", key->s, t->dtype));
    if (t->stride.size() != t->shape.size())
      return Bad(
          path, fmt::format("{}: {} sizes, {} strides", key->s, t->shape.size(), t->stride.size()));
    int64_t elements = 1, last = 0;  // last: the farthest element from the first
    for (size_t d = 0; d < t->shape.size(); ++d) {
      if (t->shape[d] < 0 || t->stride[d] < 0)
        return Bad(path, fmt::format("{}: a negative size", key->s));
      elements *= t->shape[d];
      if (t->shape[d] > 0) last += (t->shape[d] - 1) * t->stride[d];
    }
    auto it = storages.find(t->s);
    if (it == storages.end()) return Bad(path, fmt::format("{}: storage {} missing", key->s, t->s));
    if (t->offset < 0 || (elements > 0 && t->offset + last >= t->i))
      return Bad(path, fmt::format("{} runs past its storage", key->s));
    const size_t begin = it->second + static_cast<size_t>(t->offset) * size;
    if (elements > 0 && begin + static_cast<size_t>(last + 1) * size > b.size())
      return Bad(path, fmt::format("{} runs past the file's end", key->s));
    out.tensors_[key->s] = {t->dtype, t->shape, t->stride, begin, elements};
  }
  return out;
}

absl::Status TorchCheckpoint::CopyToFloats(const std::string& name, const core::Shape& shape,
                                           float* dst) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    return absl::NotFoundError(fmt::format("{}: no tensor \"{}\"", path_, name));
  const Entry& e = it->second;
  std::vector<int64_t> want;
  for (int d = 0; d < shape.rank(); ++d) want.push_back(shape[d]);
  if (e.shape != want)
    return Bad(path_, fmt::format("tensor \"{}\": expected {}, found [{}]", name, shape.ToString(),
                                  fmt::join(e.shape, ", ")));
  if (e.dtype != "Float" && e.dtype != "Double" && e.dtype != "Half" && e.dtype != "BFloat16")
    return Bad(path_, fmt::format("tensor \"{}\" holds {}, not floats", name, e.dtype));
  const char* p = bytes_.data() + e.begin;
  std::vector<int64_t> index(e.shape.size(), 0);
  for (int64_t i = 0; i < e.elements; ++i) {
    int64_t at = 0;  // the element's place in its storage, from the first
    for (size_t d = 0; d < index.size(); ++d) at += index[d] * e.stride[d];
    if (e.dtype == "Float") {
      std::memcpy(dst + i, p + 4 * at, 4);
    } else if (e.dtype == "Double") {
      double d;
      std::memcpy(&d, p + 8 * at, 8);
      dst[i] = static_cast<float>(d);
    } else {
      uint16_t bits;
      std::memcpy(&bits, p + 2 * at, 2);
      dst[i] = e.dtype == "Half" ? core::HalfToFloat(bits) : core::Bf16ToFloat(bits);
    }
    for (size_t d = index.size(); d-- > 0;) {  // the next index, row-major
      if (++index[d] < e.shape[d]) break;
      index[d] = 0;
    }
  }
  return absl::OkStatus();
}

}  // namespace mlperf::io
