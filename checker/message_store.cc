#include "checker/message_store.h"

#include <algorithm>

namespace mlperf::checker {

void MessageStore::Upsert(std::vector<Slot>& slots, const std::string& slot, Finding f) {
  for (Slot& s : slots) {
    if (s.first == slot) {
      s.second = std::move(f);
      return;
    }
  }
  slots.emplace_back(slot, std::move(f));
}

void MessageStore::PutKeyed(const std::string& slot, Finding f) {
  // The official tool files a message under its key only when the key is truthy.
  if (slot.empty()) {
    PutUnkeyed(std::move(f));
    return;
  }
  Upsert(keyed_, slot, std::move(f));
}

void MessageStore::PutUnkeyed(Finding f) { unkeyed_.push_back(std::move(f)); }

void MessageStore::PutWarning(const std::string& slot, Finding f) {
  Upsert(warnings_, slot, std::move(f));
}

void MessageStore::DropKeyed(const std::string& slot) {
  keyed_.erase(
      std::remove_if(keyed_.begin(), keyed_.end(), [&](const Slot& s) { return s.first == slot; }),
      keyed_.end());
}

std::vector<Finding> MessageStore::Errors() const {
  std::vector<Finding> out;
  out.reserve(keyed_.size() + unkeyed_.size());
  for (const Slot& s : keyed_) out.push_back(s.second);
  out.insert(out.end(), unkeyed_.begin(), unkeyed_.end());
  return out;
}

std::vector<Finding> MessageStore::Warnings() const {
  std::vector<Finding> out;
  for (const Slot& s : warnings_) out.push_back(s.second);
  out.insert(out.end(), notes_.begin(), notes_.end());
  return out;
}

}  // namespace mlperf::checker
