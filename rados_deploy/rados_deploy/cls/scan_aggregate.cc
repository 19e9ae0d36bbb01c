// Partial aggregation (see scan_aggregate.h and docs/protocol.md): Arrow's Grouper maps the key
// tuples to group ids (a NULL key is a group value of its own), hand-written typed loops keep
// each aggregate's per-group state with Spark's rules (exact integer sums, NaN above every
// number).
#include "scan_aggregate.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include "scan_order.h"

namespace cp = arrow::compute;

namespace sae::scan {

namespace pr = sae::protocol;

class Accumulator {
 public:
  explicit Accumulator(std::shared_ptr<arrow::DataType> type) : type_(std::move(type)) {}
  virtual ~Accumulator() = default;
  const std::shared_ptr<arrow::DataType>& type() const { return type_; }
  // Add `rows` rows of `values` (null: count rows) to the groups `ids`, of `groups` so far.
  virtual void Consume(const arrow::Array* values, int64_t rows, const uint32_t* ids, uint32_t groups) = 0;
  // One value per group, of type(); false with `err` set.
  virtual bool Finish(uint32_t groups, std::shared_ptr<arrow::Array>* out, Error* err) = 0;

 protected:
  // An array of type() from per-group values, NULL where `seen` (if given) is 0.
  template <typename ArrowType, typename Values>
  bool Build(const Values& values, const std::vector<uint8_t>* seen, std::shared_ptr<arrow::Array>* out,
             Error* err) const {
    auto built = [&]() -> arrow::Result<std::shared_ptr<arrow::Array>> {
      ARROW_ASSIGN_OR_RAISE(auto builder, arrow::MakeBuilder(type_, Pool()));
      auto& typed = static_cast<typename arrow::TypeTraits<ArrowType>::BuilderType&>(*builder);
      ARROW_RETURN_NOT_OK(typed.Reserve(static_cast<int64_t>(values.size())));
      for (size_t g = 0; g < values.size(); ++g) {
        ARROW_RETURN_NOT_OK(!seen || (*seen)[g] ? typed.Append(values[g]) : typed.AppendNull());
      }
      return typed.Finish();
    }();
    if (!built.ok()) {
      *err = Error{EIO, "aggregation failed: " + built.status().ToString()};
      return false;
    }
    *out = *built;
    return true;
  }

 private:
  std::shared_ptr<arrow::DataType> type_;
};

namespace {

// count_star (no values) and count: int64, never NULL.
class Count : public Accumulator {
 public:
  Count() : Accumulator(arrow::int64()) {}
  void Consume(const arrow::Array* values, int64_t rows, const uint32_t* ids, uint32_t groups) override {
    counts_.resize(groups, 0);
    bool all = !values || values->null_count() == 0;
    for (int64_t i = 0; i < rows; ++i) counts_[ids[i]] += all || values->IsValid(i);
  }
  bool Finish(uint32_t groups, std::shared_ptr<arrow::Array>* out, Error* err) override {
    counts_.resize(groups, 0);
    return Build<arrow::Int64Type>(counts_, nullptr, out, err);
  }

 private:
  std::vector<int64_t> counts_;
};

// What a sum of the protocol's sum type (scan_protocol.json's types.sums) adds in: an int64 sum
// exactly in 128 bits (the total must fit int64, whatever the rows' order), a double sum in double.
template <arrow::Type::type kSum> struct SumAcc;
template <> struct SumAcc<arrow::Type::INT64> { using type = __int128; };
template <> struct SumAcc<arrow::Type::DOUBLE> { using type = double; };

// sum: in Acc (SumAcc), a float widened first, as Spark's SUM(float) is a double; NULL without values.
template <typename T, typename Acc>
class Sum : public Accumulator {
 public:
  explicit Sum(std::string column)
      : Accumulator(std::is_floating_point_v<Acc> ? arrow::float64() : arrow::int64()), column_(std::move(column)) {}
  void Consume(const arrow::Array* values, int64_t rows, const uint32_t* ids, uint32_t groups) override {
    sums_.resize(groups, 0);
    seen_.resize(groups, 0);
    const auto& a = static_cast<const arrow::NumericArray<T>&>(*values);
    const auto* v = a.raw_values();
    for (int64_t i = 0; i < rows; ++i) {
      if (a.IsNull(i)) continue;
      sums_[ids[i]] += static_cast<Acc>(v[i]);
      seen_[ids[i]] = 1;
    }
  }
  bool Finish(uint32_t groups, std::shared_ptr<arrow::Array>* out, Error* err) override {
    sums_.resize(groups, 0);
    seen_.resize(groups, 0);
    if constexpr (std::is_floating_point_v<Acc>) {
      return Build<arrow::DoubleType>(sums_, &seen_, out, err);
    } else {
      std::vector<int64_t> fit(groups);
      for (uint32_t g = 0; g < groups; ++g) {
        if (sums_[g] < std::numeric_limits<int64_t>::min() || sums_[g] > std::numeric_limits<int64_t>::max()) {
          *err = Error{EOVERFLOW, "sum of column '" + column_ + "' overflows a 64-bit integer in this object"};
          return false;
        }
        fit[g] = static_cast<int64_t>(sums_[g]);
      }
      return Build<arrow::Int64Type>(fit, &seen_, out, err);
    }
  }

 private:
  std::string column_;
  std::vector<Acc> sums_;
  std::vector<uint8_t> seen_;
};

// min (kMax false) or max: the column's type, NULL without values. Spark's order: NaN above every
// number, -0.0 equal to 0.0 (the first seen stays), strings byte-wise unsigned as UTF8String.
template <typename T, bool kMax>
class MinMax : public Accumulator {
  using ArrayType = typename arrow::TypeTraits<T>::ArrayType;
  using View = decltype(std::declval<const ArrayType&>().GetView(0));
  using Stored = std::conditional_t<std::is_same_v<View, std::string_view>, std::string, View>;

 public:
  explicit MinMax(std::shared_ptr<arrow::DataType> type) : Accumulator(std::move(type)) {}
  void Consume(const arrow::Array* values, int64_t rows, const uint32_t* ids, uint32_t groups) override {
    best_.resize(groups);
    seen_.resize(groups, 0);
    const auto& a = static_cast<const ArrayType&>(*values);
    for (int64_t i = 0; i < rows; ++i) {
      if (a.IsNull(i)) continue;
      View v = a.GetView(i);
      uint32_t g = ids[i];
      if (!seen_[g] || Better(v, View(best_[g]))) best_[g] = Stored(v);
      seen_[g] = 1;
    }
  }
  bool Finish(uint32_t groups, std::shared_ptr<arrow::Array>* out, Error* err) override {
    best_.resize(groups);
    seen_.resize(groups, 0);
    return Build<T>(best_, &seen_, out, err);
  }

 private:
  static bool Better(View v, View best) {
    int c = SparkCompare(v, best);
    return kMax ? c > 0 : c < 0;
  }
  std::vector<Stored> best_;
  std::vector<uint8_t> seen_;
};

// The accumulator of `agg` over `field` (null for count_star), or null if its type does not go.
std::unique_ptr<Accumulator> MakeAccumulator(const Aggregate& agg, const arrow::Field* field) {
  std::unique_ptr<Accumulator> acc;
  switch (agg.fn) {
    case pr::kAggCountStar:
    case pr::kAggCount:
      return std::make_unique<Count>();
    case pr::kAggSum:
      switch (field->type()->id()) {
#define SAE_SUM_CASE(type_id, sum_id)                                                      \
  case arrow::Type::type_id:                                                               \
    return std::make_unique<Sum<arrow::TypeIdTraits<arrow::Type::type_id>::Type,           \
                                typename SumAcc<arrow::Type::sum_id>::type>>(agg.column);
        SAE_SUMMED_TYPES(SAE_SUM_CASE)
#undef SAE_SUM_CASE
        default: return nullptr;
      }
    default:   // min, max
      Ordered(field->type()->id(), [&](auto t) {
        using T = typename decltype(t)::type;
        if (agg.fn == pr::kAggMax) acc = std::make_unique<MinMax<T, true>>(field->type());
        else acc = std::make_unique<MinMax<T, false>>(field->type());
      });
      return acc;
  }
}

const char* Verb(uint8_t fn) {
  return fn == pr::kAggSum ? "sum" : fn == pr::kAggMin ? "take the min of" : "take the max of";
}

}  // namespace

std::vector<std::string> AggregateColumns(const Request& req) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  for (const auto& name : req.group_by) add(name);
  for (const auto& agg : req.aggregates) add(agg.column);
  return out;
}

Aggregation::~Aggregation() = default;

bool Aggregation::Make(const Request& req, const std::shared_ptr<arrow::Schema>& input,
                       std::unique_ptr<Aggregation>* out, Error* err) {
  std::unique_ptr<Aggregation> a(new Aggregation());
  auto refuse = [&](const std::string& what, const arrow::Field& f) {
    *err = Refuse(what, f);
    return false;
  };
  arrow::FieldVector fields;
  std::vector<arrow::TypeHolder> key_types;
  for (const auto& name : req.group_by) {
    int pos = input->GetFieldIndex(name);
    const auto& f = *input->field(pos);
    if (!Grouped(f.type()->id())) {
      if (!arrow::is_floating(f.type()->id())) return refuse("group by", f);
      // a floating-point key: Spark normalizes NaN and -0.0 in keys, so it groups them itself
      *err = Error{EINVAL, "cannot group by floating-point column '" + name + "' in the OSD"};
      return false;
    }
    a->key_pos_.push_back(pos);
    key_types.emplace_back(f.type());
    fields.push_back(arrow::field(name, f.type()));
  }
  for (size_t i = 0; i < req.aggregates.size(); ++i) {
    const Aggregate& agg = req.aggregates[i];
    int pos = agg.fn == pr::kAggCountStar ? -1 : input->GetFieldIndex(agg.column);
    const arrow::Field* f = pos < 0 ? nullptr : input->field(pos).get();
    auto acc = MakeAccumulator(agg, f);
    if (!acc) return refuse(Verb(agg.fn), *f);
    fields.push_back(arrow::field("agg" + std::to_string(i), acc->type()));
    a->value_pos_.push_back(pos);
    a->accumulators_.push_back(std::move(acc));
  }
  a->schema_ = arrow::schema(std::move(fields));
  if (!key_types.empty()) {
    a->ctx_ = std::make_unique<cp::ExecContext>(Pool());
    auto grouper = cp::Grouper::Make(key_types, a->ctx_.get());
    if (!grouper.ok()) {
      *err = Error{EIO, "cannot group: " + grouper.status().ToString()};
      return false;
    }
    a->grouper_ = std::move(*grouper);
  }
  *out = std::move(a);
  return true;
}

bool Aggregation::Consume(const arrow::RecordBatch& batch, Error* err) {
  int64_t rows = batch.num_rows();
  const uint32_t* ids = nullptr;
  uint32_t groups = 1;
  arrow::Datum group_ids;
  if (grouper_) {
    std::vector<arrow::Datum> keys;
    for (int p : key_pos_) keys.emplace_back(batch.column(p));
    auto r = grouper_->Consume(cp::ExecSpan(cp::ExecBatch(std::move(keys), rows)));
    if (!r.ok()) {
      *err = Error{EIO, "grouping failed: " + r.status().ToString()};
      return false;
    }
    group_ids = std::move(*r);
    ids = group_ids.array()->GetValues<uint32_t>(1);
    groups = grouper_->num_groups();
  } else {
    if (zeros_.size() < static_cast<size_t>(rows)) zeros_.resize(static_cast<size_t>(rows), 0);
    ids = zeros_.data();
  }
  for (size_t i = 0; i < accumulators_.size(); ++i) {
    accumulators_[i]->Consume(value_pos_[i] < 0 ? nullptr : batch.column(value_pos_[i]).get(), rows, ids, groups);
  }
  return true;
}

bool Aggregation::Finish(std::shared_ptr<arrow::RecordBatch>* out, Error* err) {
  uint32_t groups = grouper_ ? grouper_->num_groups() : 1;
  arrow::ArrayVector columns;
  if (grouper_) {
    auto uniques = grouper_->GetUniques();
    if (!uniques.ok()) {
      *err = Error{EIO, "grouping failed: " + uniques.status().ToString()};
      return false;
    }
    for (const auto& key : uniques->values) columns.push_back(key.make_array());
  }
  for (auto& acc : accumulators_) {
    std::shared_ptr<arrow::Array> column;
    if (!acc->Finish(groups, &column, err)) return false;
    columns.push_back(std::move(column));
  }
  *out = arrow::RecordBatch::Make(schema_, groups, std::move(columns));
  return true;
}

}  // namespace sae::scan
