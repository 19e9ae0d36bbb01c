// Per-object top-k (see scan_topk.h and docs/protocol.md): hand-written comparisons in Spark's
// order (Arrow's sorts place NaN among or next to the NULLs, not above every number in both
// directions), nth_element for the limit-th row, Take for the rows up to it and its ties.
#include "scan_topk.h"

#include <algorithm>
#include <numeric>

#include <arrow/api.h>
#include <arrow/compute/api.h>

#include "scan_order.h"

namespace cp = arrow::compute;

namespace sae::scan {

class KeyOrder {
 public:
  KeyOrder(bool descending, bool nulls_first) : descending_(descending), nulls_first_(nulls_first) {}
  virtual ~KeyOrder() = default;
  // Compare rows of `values` from now on.
  virtual void Reset(const arrow::Array& values) = 0;
  // < 0, 0 or > 0 as row a comes before, ties with or comes after row b.
  virtual int Compare(int64_t a, int64_t b) const = 0;

 protected:
  bool descending_, nulls_first_;
};

namespace {

template <typename T>
class TypedKeyOrder final : public KeyOrder {
  using ArrayType = typename arrow::TypeTraits<T>::ArrayType;

 public:
  using KeyOrder::KeyOrder;
  void Reset(const arrow::Array& values) override { values_ = &static_cast<const ArrayType&>(values); }
  int Compare(int64_t a, int64_t b) const override {
    bool null_a = values_->IsNull(a), null_b = values_->IsNull(b);
    if (null_a || null_b) return null_a == null_b ? 0 : null_a == nulls_first_ ? -1 : 1;
    int c = SparkCompare(values_->GetView(a), values_->GetView(b));
    return descending_ ? -c : c;
  }

 private:
  const ArrayType* values_ = nullptr;
};

}  // namespace

TopK::~TopK() = default;

bool TopK::Make(const Request& req, const std::shared_ptr<arrow::Schema>& input, int outputs,
                std::unique_ptr<TopK>* out, Error* err) {
  std::unique_ptr<TopK> t(new TopK());
  t->limit_ = req.limit;
  t->outputs_ = outputs;
  t->reduce_at_ = 2 * t->limit_;
  for (const auto& key : req.order_by) {
    int pos = input->GetFieldIndex(key.column);
    const auto& f = *input->field(pos);
    std::unique_ptr<KeyOrder> order;
    if (!Ordered(f.type()->id(), [&](auto type) {
          order = std::make_unique<TypedKeyOrder<typename decltype(type)::type>>(key.descending, key.nulls_first);
        })) {
      *err = Refuse("sort by", f);
      return false;
    }
    t->key_pos_.push_back(pos);
    t->keys_.push_back(std::move(order));
  }
  *out = std::move(t);
  return true;
}

arrow::Result<std::shared_ptr<arrow::RecordBatch>> TopK::Select(std::shared_ptr<arrow::RecordBatch> batch) {
  int64_t rows = batch->num_rows();
  if (rows <= limit_) return batch;
  for (size_t k = 0; k < keys_.size(); ++k) keys_[k]->Reset(*batch->column(key_pos_[k]));
  auto compare = [&](int64_t a, int64_t b) {
    for (const auto& key : keys_) {
      if (int c = key->Compare(a, b)) return c;
    }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  std::nth_element(order.begin(), order.begin() + (limit_ - 1), order.end(),
                   [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  int64_t boundary = order[static_cast<size_t>(limit_ - 1)];
  arrow::Int64Builder kept;
  ARROW_RETURN_NOT_OK(kept.Reserve(limit_));
  for (int64_t r = 0; r < rows; ++r) {
    if (compare(r, boundary) <= 0) ARROW_RETURN_NOT_OK(kept.Append(r));
  }
  ARROW_ASSIGN_OR_RAISE(auto indices, kept.Finish());
  ARROW_ASSIGN_OR_RAISE(auto taken, cp::Take(batch, indices));
  return taken.record_batch();
}

arrow::Status TopK::Reduce() {
  if (pending_.empty()) return arrow::Status::OK();
  std::shared_ptr<arrow::RecordBatch> all = pending_.front();
  if (pending_.size() > 1) {
    ARROW_ASSIGN_OR_RAISE(all, arrow::ConcatenateRecordBatches(pending_));
  }
  ARROW_ASSIGN_OR_RAISE(all, Select(std::move(all)));
  pending_rows_ = all->num_rows();
  pending_ = {std::move(all)};
  reduce_at_ = 2 * std::max(limit_, pending_rows_);   // amortized: ties may outnumber the limit
  return arrow::Status::OK();
}

bool TopK::Consume(std::shared_ptr<arrow::RecordBatch> batch, Error* err) {
  auto st = [&]() -> arrow::Status {
    ARROW_ASSIGN_OR_RAISE(auto selected, Select(std::move(batch)));
    pending_rows_ += selected->num_rows();
    pending_.push_back(std::move(selected));
    return pending_rows_ >= reduce_at_ ? Reduce() : arrow::Status::OK();
  }();
  if (!st.ok()) *err = Error{EIO, "top-k failed: " + st.ToString()};
  return st.ok();
}

bool TopK::Finish(std::shared_ptr<arrow::RecordBatch>* out, Error* err) {
  auto st = Reduce();
  if (st.ok() && !pending_.empty()) {
    std::vector<int> columns(static_cast<size_t>(outputs_));
    std::iota(columns.begin(), columns.end(), 0);
    auto narrowed = pending_.front()->SelectColumns(columns);
    st = narrowed.status();
    if (st.ok()) *out = *narrowed;
  }
  if (!st.ok()) *err = Error{EIO, "top-k failed: " + st.ToString()};
  return st.ok();
}

}  // namespace sae::scan
