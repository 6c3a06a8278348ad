// Writes every case of an emitter-cases JSON file (see emitter_cases.json)
// with our Logger to stdout, for a byte-by-byte comparison with the official
// Python emitter (check_emitter.py).
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/json.h"
#include "logging/mllog.h"

using mlperf::json::Value;
namespace mllog = mlperf::mllog;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: emit_cases CASES.json\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  auto cases = mlperf::json::Parse(text.str(), {.encoding = mlperf::json::Encoding::kUtf8});
  if (!in || !cases.ok() || !cases->is_array()) {
    std::cerr << argv[1] << ": cannot read cases: " << cases.status() << "\n";
    return 2;
  }
  auto logger = mllog::Logger::Create({.stream = &std::cout});
  for (const Value& c : cases->as_array()) {
    mllog::Record r;
    const std::string& type = c.Find("type")->as_string();
    r.type = type == "start" ? mllog::EventType::kIntervalStart
             : type == "end" ? mllog::EventType::kIntervalEnd
                             : mllog::EventType::kPointInTime;
    r.key = c.Find("key")->as_string();
    r.value = *c.Find("value");
    if (const Value* md = c.Find("metadata")) r.metadata = md->as_object();
    r.time_ms = c.Find("time_ms")->as_int();
    if (const Value* ns = c.Find("namespace")) r.name_space = ns->as_string();
    if (const Value* clear = c.Find("clear_line")) r.clear_line = clear->as_bool();
    r.caller = {c.Find("file")->as_string(), c.Find("lineno")->as_int()};
    (*logger)->Log(r);
  }
  return 0;
}
