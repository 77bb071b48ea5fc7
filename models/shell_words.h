#pragma once
// Splitting a command line the way a POSIX shell splits words, so a user can paste the
// launch line of their script (quotes, backslash-newline continuations and all).
#include <string>
#include <vector>

namespace twinflow::models {

// The words of `text`: separated by unquoted blanks (space, tab, newline); '...' keeps every
// character, "..." keeps all but \" \\ \$ \` (and drops backslash-newline), an unquoted
// backslash escapes the next character and a backslash-newline joins two lines. Variables,
// globs and command substitutions are left as written: nothing is expanded. An unquoted #
// starting a word comments out the rest of its line. InvalidArgumentError naming `what` for an
// unterminated quote or a trailing backslash.
std::vector<std::string> SplitShellWords(const std::string& text, const std::string& what);

}  // namespace twinflow::models
