// Pretrained word embeddings in word2vec text form: one "word v1 v2 ... vn" line per word.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "dynet/dict.h"
#include "dynet/model.h"

namespace dynet {

// Writes one line per word of d (ids 0 .. d.size()-1): the word, then row `id` of lp (values
// printed exactly, shortest round-trip form). Replaces the file atomically. Throws
// std::invalid_argument when lp has fewer rows than d has words or a word contains white space.
void save_pretrained_embeddings(const std::string& fname, const Dict& d, const LookupParameter& lp);

// Reads "word v1 ... vn" lines: each word is converted with d (added unless d is frozen; a frozen
// dictionary's unknown words are skipped rather than mapped to unk) and vectors[id] receives its
// values (a repeated word keeps the last line). A first line of exactly two integers (word2vec's
// "count dims" header) is skipped. Throws std::runtime_error naming the file and line for a line
// without values, a token that is not a number, or a line whose length differs from the others;
// on error neither d nor vectors is changed.
void read_pretrained_embeddings(const std::string& fname, Dict& d, std::unordered_map<int, std::vector<float>>& vectors);

}  // namespace dynet
