#include "models/shell_words.h"

#include "engine/core/error.h"

namespace twinflow::models {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Reads the double-quoted run starting after the opening quote at `i`; returns the index of
// the closing quote.
size_t ReadDoubleQuoted(const std::string& text, size_t i, std::string& word,
                        const std::string& what) {
  for (++i; i < text.size() && text[i] != '"'; ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      const char next = text[i + 1];
      if (next == '\n') {
        ++i;
        continue;
      }
      if (next == '"' || next == '\\' || next == '$' || next == '`') {
        word += next;
        ++i;
        continue;
      }
    }
    word += text[i];
  }
  if (i >= text.size()) throw InvalidArgumentError(what + ": unterminated \" quote");
  return i;
}

}  // namespace

std::vector<std::string> SplitShellWords(const std::string& text, const std::string& what) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // a word has begun (an empty '' is still a word)
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (IsBlank(c)) {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else if (c == '#' && !in_word) {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) throw InvalidArgumentError(what + ": a trailing backslash");
      if (text[i + 1] != '\n') {
        word += text[i + 1];
        in_word = true;
      }
      ++i;
    } else if (c == '\'') {
      const size_t close = text.find('\'', i + 1);
      if (close == std::string::npos) throw InvalidArgumentError(what + ": unterminated ' quote");
      word += text.substr(i + 1, close - i - 1);
      in_word = true;
      i = close;
    } else if (c == '"') {
      i = ReadDoubleQuoted(text, i, word, what);
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  return words;
}

}  // namespace twinflow::models
