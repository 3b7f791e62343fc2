// Shell quoting for the commands the LC prints for an operator to paste (the dashboard's rollback
// commands, the CLI's hints): a deploy target comes from a GM object, so it may hold `;`, `$(..)`
// or spaces, which must reach the command as one literal argument.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sedna::app {

// `word` as one POSIX shell word with its literal value: unchanged when it is not empty and
// every byte is in [A-Za-z0-9_@%+=:,./-] (nothing a shell expands or splits, and no leading
// `~`); otherwise in single quotes, each `'` written as '\'' (Python's shlex.quote). "" -> ''.
std::string ShellQuote(std::string_view word);

// The words, each ShellQuote'd, joined by single spaces.
std::string ShellCommand(const std::vector<std::string>& words);

// "sedna-lc rollback-model <target> --version <version>", the target quoted.
std::string RollbackCommand(std::string_view target, int64_t version);

}  // namespace sedna::app
