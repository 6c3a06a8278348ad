#include "base/flags.h"

#include <algorithm>
#include <optional>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "fmt/format.h"

namespace mlperf::base {
namespace {

std::string Underscored(std::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

// The flag called `name` ('-' or '_'), if it is one of `names`.
absl::CommandLineFlag* FindOurs(const std::string& name, std::span<const std::string_view> names) {
  const bool ours = std::any_of(names.begin(), names.end(),
                                [&](std::string_view n) { return Underscored(n) == name; });
  return ours ? absl::FindCommandLineFlag(name) : nullptr;
}

bool IsHelp(std::string_view arg) {
  return arg == "-h" || arg == "--help" || arg == "-help" || arg == "--helpfull";
}

}  // namespace

absl::StatusOr<ParsedArgs> ParseFlags(int argc, char** argv,
                                      std::span<const std::string_view> names,
                                      bool allow_positional) {
  ParsedArgs parsed;
  bool only_positional = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    const bool is_flag = !only_positional && arg.size() >= 2 && arg[0] == '-';
    if (!is_flag) {
      if (!allow_positional) {
        return absl::InvalidArgumentError(
            fmt::format("unexpected argument '{}' (see --help)", arg));
      }
      parsed.positional.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positional = true;
      continue;
    }
    if (IsHelp(arg)) {
      parsed.help = true;
      continue;
    }
    if (arg == "--version" || arg == "-version") {
      parsed.version = true;
      continue;
    }
    // `spelled` is the flag as typed, without its value, for messages.
    const size_t eq = arg.find('=');
    const std::string_view spelled = arg.substr(0, eq);
    const std::string_view bare = spelled.substr(spelled.size() > 1 && spelled[1] == '-' ? 2 : 1);
    std::optional<std::string> value;
    if (eq != std::string_view::npos) value = std::string(arg.substr(eq + 1));

    const std::string name = Underscored(bare);
    absl::CommandLineFlag* flag = FindOurs(name, names);
    bool negated = false;
    if (flag == nullptr && name.starts_with("no") && !value.has_value()) {
      flag = FindOurs(name.substr(2), names);
      negated = flag != nullptr && flag->IsOfType<bool>();
      if (!negated) flag = nullptr;
    }
    if (flag == nullptr)
      return absl::InvalidArgumentError(fmt::format("unknown flag '{}' (see --help)", spelled));
    if (!value.has_value()) {
      if (flag->IsOfType<bool>()) {
        value = negated ? "false" : "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(fmt::format("flag '{}' needs a value", spelled));
      }
    }
    std::string error;
    if (!flag->ParseFrom(*value, &error))
      return absl::InvalidArgumentError(fmt::format("flag '{}': {}", spelled, error));
    const std::string canonical(flag->Name());
    if (std::find(parsed.given.begin(), parsed.given.end(), canonical) == parsed.given.end())
      parsed.given.push_back(canonical);
  }
  return parsed;
}

std::string FlagsHelp(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view name : names) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(Underscored(name));
    if (flag == nullptr) continue;  // not linked into this binary
    const std::string value = flag->DefaultValue();
    out += fmt::format("  --{:<12} {} (default: {})\n", name, flag->Help(),
                       value.empty() ? "none" : value);
  }
  return out;
}

}  // namespace mlperf::base
