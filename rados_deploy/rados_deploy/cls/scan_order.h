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

// Calls f(std::type_identity<T>{}) with the Arrow type class of an ordered type (integers,
// float, double, bool, strings, date32, timestamp); false for any other type.
template <typename F>
bool Ordered(arrow::Type::type id, F&& f) {
  using arrow::Type;
  switch (id) {
    case Type::INT8: f(std::type_identity<arrow::Int8Type>{}); return true;
    case Type::INT16: f(std::type_identity<arrow::Int16Type>{}); return true;
    case Type::INT32: f(std::type_identity<arrow::Int32Type>{}); return true;
    case Type::INT64: f(std::type_identity<arrow::Int64Type>{}); return true;
    case Type::UINT8: f(std::type_identity<arrow::UInt8Type>{}); return true;
    case Type::UINT16: f(std::type_identity<arrow::UInt16Type>{}); return true;
    case Type::UINT32: f(std::type_identity<arrow::UInt32Type>{}); return true;
    case Type::UINT64: f(std::type_identity<arrow::UInt64Type>{}); return true;
    case Type::FLOAT: f(std::type_identity<arrow::FloatType>{}); return true;
    case Type::DOUBLE: f(std::type_identity<arrow::DoubleType>{}); return true;
    case Type::BOOL: f(std::type_identity<arrow::BooleanType>{}); return true;
    case Type::STRING: f(std::type_identity<arrow::StringType>{}); return true;
    case Type::LARGE_STRING: f(std::type_identity<arrow::LargeStringType>{}); return true;
    case Type::DATE32: f(std::type_identity<arrow::Date32Type>{}); return true;
    case Type::TIMESTAMP: f(std::type_identity<arrow::TimestampType>{}); return true;
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
