#include "dynet/dict.h"

#include <sstream>
#include <stdexcept>

namespace dynet {

int Dict::convert(const std::string& word) {
  const auto it = ids_.find(word);
  if (it != ids_.end()) return it->second;
  if (frozen_) {
    if (map_unk_) return unk_id_;
    throw std::runtime_error("Dict::convert: unknown word '" + word + "' in a frozen dictionary with no unk word set");
  }
  const int id = static_cast<int>(words_.size());
  words_.push_back(word);
  ids_.emplace(word, id);
  return id;
}

const std::string& Dict::convert(const int& id) const {
  if (id < 0 || static_cast<size_t>(id) >= words_.size())
    throw std::invalid_argument("Dict::convert: word id " + std::to_string(id) + " out of range for a dictionary of " +
                                std::to_string(words_.size()) + " words");
  return words_[static_cast<size_t>(id)];
}

void Dict::set_unk(const std::string& word) {
  if (!frozen_) throw std::runtime_error("Dict::set_unk: call set_unk() only after freeze()");
  if (map_unk_) throw std::runtime_error("Dict::set_unk: the unk word is already set (to '" + words_[unk_id_] + "')");
  frozen_ = false;
  unk_id_ = convert(word);
  frozen_ = true;
  map_unk_ = true;
}

void Dict::clear() {
  words_.clear();
  ids_.clear();
  map_unk_ = false;
  unk_id_ = -1;
}

std::vector<int> read_sentence(const std::string& line, Dict& sd) {
  std::istringstream in(line);
  std::vector<int> ids;
  std::string word;
  while (in >> word) ids.push_back(sd.convert(word));
  return ids;
}

void read_sentence_pair(const std::string& line, std::vector<int>& s, Dict& sd, std::vector<int>& t, Dict& td) {
  std::istringstream in(line);
  std::vector<int> src, tgt;
  std::string word;
  bool target = false;
  while (in >> word) {
    if (word == "|||") {
      if (target) throw std::invalid_argument("read_sentence_pair: more than one '|||' in '" + line + "'");
      target = true;
      continue;
    }
    (target ? tgt : src).push_back((target ? td : sd).convert(word));
  }
  if (!target) throw std::invalid_argument("read_sentence_pair: no '|||' separator in '" + line + "'");
  s = std::move(src);
  t = std::move(tgt);
}

}  // namespace dynet
