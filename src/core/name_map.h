// NameMap: a map from names to values kept in one block, sorted by name. It is what the core's
// metrics (core::Metrics, core::MetricNumbers) need of std::map<std::string, V> (lookup, insert,
// ordered iteration, equality) without a node per name: a worker report carries a few metrics per
// result, decoded, copied into facts and freed on every report, and the node per name was most of
// that work (docs/benchmarks.md, session 27). Insertion is linear, lookup logarithmic: for the
// handful of names a report has (kMaxObservedMetrics bounds the observed ones), both are cheaper
// than a tree's.
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sedna::core {

template <class V>
class NameMap {
 public:
  using key_type = std::string;
  using mapped_type = V;
  using value_type = std::pair<std::string, V>;
  using iterator = typename std::vector<value_type>::iterator;
  using const_iterator = typename std::vector<value_type>::const_iterator;
  using size_type = std::size_t;

  NameMap() = default;
  // As std::map's: of names given twice, the first is kept.
  NameMap(std::initializer_list<value_type> init) {
    for (const value_type& e : init) emplace(e.first, e.second);
  }

  // The value of `name`, value-initialized and inserted if absent.
  V& operator[](std::string_view name) {
    auto it = LowerBound(name);
    if (it == items_.end() || it->first != name) it = items_.emplace(it, std::string(name), V{});
    return it->second;
  }
  // Inserts (name, value) unless `name` is present; the bool says whether it was inserted.
  std::pair<iterator, bool> emplace(std::string_view name, V value) {
    auto it = LowerBound(name);
    if (it != items_.end() && it->first == name) return {it, false};
    return {items_.emplace(it, std::string(name), std::move(value)), true};
  }
  std::pair<iterator, bool> insert(value_type v) { return emplace(v.first, std::move(v.second)); }

  iterator find(std::string_view name) {
    auto it = LowerBound(name);
    return it != items_.end() && it->first == name ? it : items_.end();
  }
  const_iterator find(std::string_view name) const {
    auto it = LowerBound(name);
    return it != items_.end() && it->first == name ? it : items_.end();
  }
  // As std::map's: throws std::out_of_range when `name` is absent (for tests; the core uses find).
  const V& at(std::string_view name) const {
    auto it = find(name);
    if (it == items_.end()) throw std::out_of_range("NameMap::at: no " + std::string(name));
    return it->second;
  }
  std::size_t count(std::string_view name) const { return find(name) != end() ? 1 : 0; }
  bool contains(std::string_view name) const { return find(name) != end(); }
  std::size_t erase(std::string_view name) {
    auto it = find(name);
    if (it == items_.end()) return 0;
    items_.erase(it);
    return 1;
  }

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear() { items_.clear(); }
  void reserve(std::size_t n) { items_.reserve(n); }
  void swap(NameMap& other) noexcept { items_.swap(other.items_); }

  bool operator==(const NameMap&) const = default;

 private:
  iterator LowerBound(std::string_view name) {
    return std::lower_bound(items_.begin(), items_.end(), name,
                            [](const value_type& e, std::string_view n) { return e.first < n; });
  }
  const_iterator LowerBound(std::string_view name) const {
    return std::lower_bound(items_.begin(), items_.end(), name,
                            [](const value_type& e, std::string_view n) { return e.first < n; });
  }

  std::vector<value_type> items_;  // sorted by name, names unique
};

// A JSON library's generic rules would take a NameMap for an array of pairs: converting one is a
// compile error, so that the adapters convert it member by member, as an object.
template <class J, class V>
void to_json(J&, const NameMap<V>&) = delete;
template <class J, class V>
void from_json(const J&, NameMap<V>&) = delete;

}  // namespace sedna::core
