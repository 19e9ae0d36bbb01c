// Partial aggregation in the OSD (docs/protocol.md, "Aggregates"): the rows that pass the filter,
// grouped by the request's group columns, with count_star, count, sum, min and max per group,
// exactly as Spark computes a partial aggregate, so that Spark merging the objects' partials gets
// its own answer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <arrow/compute/row/grouper.h>
#include <arrow/record_batch.h>

#include "scan_core.h"

namespace sae::scan {

// The columns an aggregate request reads: group columns, then aggregated ones, each once.
std::vector<std::string> AggregateColumns(const Request& req);

// One aggregate's per-group state (scan_aggregate.cc).
class Accumulator;

class Aggregation {
 public:
  // The aggregation of `req` over `input` (the schema of AggregateColumns(req), in that order);
  // false with `err` (EINVAL) for a column that cannot be grouped or aggregated.
  static bool Make(const Request& req, const std::shared_ptr<arrow::Schema>& input,
                   std::unique_ptr<Aggregation>* out, Error* err);
  ~Aggregation();

  // The reply's schema: the group columns, then agg0, agg1, ... in request order.
  const std::shared_ptr<arrow::Schema>& schema() const { return schema_; }
  // Add the rows of `batch` (schema `input`, every row kept); false with `err` (EIO).
  bool Consume(const arrow::RecordBatch& batch, Error* err);
  // Every group as one batch (one row without group columns, even when no row came); false with
  // `err` (EOVERFLOW: an integer sum does not fit 64 bits, EIO).
  bool Finish(std::shared_ptr<arrow::RecordBatch>* out, Error* err);

 private:
  Aggregation() = default;

  std::shared_ptr<arrow::Schema> schema_;
  std::vector<int> key_pos_;                      // positions of the group columns in the input
  std::vector<int> value_pos_;                    // per aggregate: its column's position, -1: none
  std::unique_ptr<arrow::compute::ExecContext> ctx_;
  std::unique_ptr<arrow::compute::Grouper> grouper_;   // null without group columns
  std::vector<std::unique_ptr<Accumulator>> accumulators_;
  std::vector<uint32_t> zeros_;                   // the group ids without group columns
};

}  // namespace sae::scan
