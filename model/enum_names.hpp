#pragma once
// One name table per enum, read both ways: the name an enumerator is written as (JSON, CSV,
// tables, shard files, messages) and the enumerator a config's name stands for. A new enumerator
// is one row of its table; a name not in it is an error that lists the names there are.

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tilesim {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

template <class E, size_t N>
constexpr const char* enum_name(const std::array<EnumName<E>, N>& table, E value) {
  for (const auto& row : table)
    if (row.value == value) return row.name.data();
  return "?";  // an enumerator missing from its table (tests/model_test.cpp checks each table)
}

template <class E, size_t N>
std::optional<E> enum_named(const std::array<EnumName<E>, N>& table, std::string_view name) {
  for (const auto& row : table)
    if (row.name == name) return row.value;
  return std::nullopt;
}

template <class E, size_t N>
std::vector<std::string> enum_names(const std::array<EnumName<E>, N>& table) {
  std::vector<std::string> names;
  for (const auto& row : table) names.emplace_back(row.name);
  return names;
}

}  // namespace tilesim
