// "Did you mean" suggestions for misspelt keys and flags.

#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace clustersim {

// The Levenshtein distance between a and b (insertions, deletions and substitutions of one byte
// each cost 1). O(|a|·|b|) time, O(|b|) memory.
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest to `word` by edit_distance if it is nearer than `below` (the first of
// equally near ones), else "". `below` = 3: two typing mistakes.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates, size_t below = 3);

}  // namespace clustersim
