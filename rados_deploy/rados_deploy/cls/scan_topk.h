// Per-object top-k in the OSD (docs/protocol.md, "Top-k"): of the rows that pass the filter, the
// first `limit` in the request's order (Spark's: NULLs first or last per key, NaN above every
// number) plus every row that ties with the limit-th on all keys, so that Spark, sorting the
// objects' replies again, still chooses among the ties itself.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <arrow/record_batch.h>

#include "scan_core.h"

namespace sae::scan {

// One sort key's order over one array (scan_topk.cc).
class KeyOrder;

// A running top-k over batches: each batch's own top rows (and ties) are kept, and the kept rows
// are selected again whenever they reach twice the last selection, so memory stays at about
// limit + ties rows plus a batch.
class TopK {
 public:
  // The top-k of `req` (at least one sort key) over `input` (kept rows whose first `outputs`
  // columns are the reply's, then any sort-only keys); false with `err` (EINVAL) for a sort key
  // of a type the class does not order.
  static bool Make(const Request& req, const std::shared_ptr<arrow::Schema>& input, int outputs,
                   std::unique_ptr<TopK>* out, Error* err);
  ~TopK();

  // Add the rows of `batch` (schema `input`, every row kept); false with `err` (EIO).
  bool Consume(std::shared_ptr<arrow::RecordBatch> batch, Error* err);
  // The selected rows in file order, narrowed to the reply's columns (null when no row came);
  // false with `err` (EIO).
  bool Finish(std::shared_ptr<arrow::RecordBatch>* out, Error* err);

 private:
  TopK() = default;
  // The rows of `batch` among its first limit, or tying with the limit-th, in file order.
  arrow::Result<std::shared_ptr<arrow::RecordBatch>> Select(std::shared_ptr<arrow::RecordBatch> batch);
  // Select again over every pending batch.
  arrow::Status Reduce();

  int64_t limit_ = 0;
  int outputs_ = 0;
  std::vector<int> key_pos_;                          // the sort keys' positions in the input
  std::vector<std::unique_ptr<KeyOrder>> keys_;
  std::vector<std::shared_ptr<arrow::RecordBatch>> pending_;   // candidates, in file order
  int64_t pending_rows_ = 0;
  int64_t reduce_at_ = 0;                             // reduce when pending_rows_ reaches it
};

}  // namespace sae::scan
