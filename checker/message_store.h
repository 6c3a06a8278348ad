// The official checker's message bookkeeping, which decides verdicts:
// keyed errors (the last one per key wins, and a later rule file that defines
// a key drops earlier errors for it), unkeyed errors that accumulate, and
// warnings (EXACTLY_ONE with identical duplicates) that never fail a log.
#pragma once

#include <string>
#include <vector>

#include "checker/report.h"

namespace mlperf::checker {

class MessageStore {
 public:
  // Keyed by `slot` (the official key): replaces an earlier error for it,
  // keeping that error's position, like a Python dict.
  void PutKeyed(const std::string& slot, Finding f);
  void PutUnkeyed(Finding f);
  void PutWarning(const std::string& slot, Finding f);
  // Our own notes (not in the official tool); never fail a log.
  void PutNote(Finding f) { notes_.push_back(std::move(f)); }
  // A rule file defining `slot` supersedes keyed errors raised earlier for it.
  void DropKeyed(const std::string& slot);

  bool has_errors() const { return !keyed_.empty() || !unkeyed_.empty(); }

  // Warnings first, then keyed errors, then unkeyed ones (the official order).
  std::vector<Finding> Errors() const;
  std::vector<Finding> Warnings() const;

 private:
  using Slot = std::pair<std::string, Finding>;
  static void Upsert(std::vector<Slot>& slots, const std::string& slot, Finding f);

  std::vector<Slot> warnings_;
  std::vector<Slot> keyed_;
  std::vector<Finding> unkeyed_;
  std::vector<Finding> notes_;
};

}  // namespace mlperf::checker
