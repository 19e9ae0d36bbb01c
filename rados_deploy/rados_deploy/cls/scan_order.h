// Spark's order of values, shared by the aggregates' min/max (scan_aggregate.cc) and top-k
// (scan_topk.cc): the types the class orders, and how two non-NULL values compare.
#pragma once

#include <cerrno>
#include <cmath>
#include <string>
#include <type_traits>

#include <arrow/type.h>
#include <arrow/type_traits.h>

#include "scan_core.h"

namespace sae::scan {

// Calls f(std::type_identity<T>{}) with the Arrow type class of a type the class orders
// (scan_protocol.json's types.ordered); false for any other type.
template <typename F>
bool Ordered(arrow::Type::type id, F&& f) {
  switch (id) {
#define SAE_ORDERED_CASE(type_id) \
  case arrow::Type::type_id: f(std::type_identity<arrow::TypeIdTraits<arrow::Type::type_id>::Type>{}); return true;
    SAE_ORDERED_TYPES(SAE_ORDERED_CASE)
#undef SAE_ORDERED_CASE
    default: return false;
  }
}

// Whether the class groups by a column of this type (scan_protocol.json's types.grouped).
inline bool Grouped(arrow::Type::type id) {
  switch (id) {
#define SAE_GROUPED_CASE(type_id) case arrow::Type::type_id:
    SAE_GROUPED_TYPES(SAE_GROUPED_CASE)
#undef SAE_GROUPED_CASE
      return true;
    default: return false;
  }
}

// -1, 0 or 1 as a is before, equal to or after b in Spark's ascending order: NaN above every
// number and equal to NaN, -0.0 equal to 0.0, strings byte-wise unsigned (as UTF8String: a
// string_view's char_traits<char> compares as unsigned char), false before true.
template <typename V>
int SparkCompare(const V& a, const V& b) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) - std::isnan(b);
  }
  return a < b ? -1 : b < a ? 1 : 0;
}

// The one-line refusal of a column whose type an operation does not take.
inline Error Refuse(const std::string& what, const arrow::Field& f) {
  return Error{EINVAL, "cannot " + what + " column '" + f.name() + "' of type " + f.type()->ToString() + " in the OSD"};
}

}  // namespace sae::scan
