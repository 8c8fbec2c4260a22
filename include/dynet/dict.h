// Dict: a word <-> id vocabulary (DyNet's dynet/dict.h).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>
#if __has_include(<unistd.h>)
#include <unistd.h>  // DyNet's dict.h brought it in with Boost's headers: its train_textcat.cc calls getpid()
#endif

namespace dynet {

class Dict {
 public:
  Dict() = default;

  unsigned size() const { return static_cast<unsigned>(words_.size()); }
  bool contains(const std::string& word) const { return ids_.count(word) != 0; }
  // After freeze(), unknown words are no longer added: convert() returns the unk id, or throws
  // std::runtime_error when no unk word was set.
  void freeze() { frozen_ = true; }
  bool is_frozen() const { return frozen_; }

  // The word's id, adding the word (next id) if it is new and the dictionary is not frozen.
  int convert(const std::string& word);
  // The word with this id; throws std::invalid_argument when out of range.
  const std::string& convert(const int& id) const;

  // Adds `word` (if new) as the id unknown words map to. As in DyNet, only allowed once and only on a
  // frozen dictionary (std::runtime_error otherwise).
  void set_unk(const std::string& word);
  int get_unk_id() const { return unk_id_; }

  std::vector<std::string> get_words() const { return words_; }
  // Removes every word and the unk setting; the frozen state is kept.
  void clear();

 private:
  bool frozen_ = false;
  bool map_unk_ = false;
  int unk_id_ = -1;
  std::vector<std::string> words_;
  std::unordered_map<std::string, int> ids_;
};

// Whitespace-separated tokens of `line` converted with `sd`.
std::vector<int> read_sentence(const std::string& line, Dict& sd);
// "source tokens ||| target tokens": source ids into s (with sd), target ids into t (with td).
void read_sentence_pair(const std::string& line, std::vector<int>& s, Dict& sd, std::vector<int>& t, Dict& td);

}  // namespace dynet
