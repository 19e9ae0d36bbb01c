// Late materialization (docs/protocol.md, "Late materialization"): the filter's columns of a batch
// are decoded first; every other returned column is then decoded only as far as its Parquet column
// reader must (definition levels and values, or only dictionary indices), and only the rows that
// passed become Arrow values. A batch where no row passes skips the other columns' pages it covers
// whole. Columns whose Arrow type the gather does not reproduce exactly are read with the filter's.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <arrow/compute/expression.h>
#include <arrow/record_batch.h>
#include <arrow/status.h>
#include <parquet/arrow/reader.h>

#include "scan_core.h"

namespace sae::scan {

class LateColumn;

// The kept rows of a file's batches, the carried columns in their order, read late where it pays.
class LateScan {
 public:
  ~LateScan();
  // A late scan of `reader` (every row group in order), or null when no carried column can be read
  // late or over an eighth of the first batch's rows pass (then the caller reads every column at
  // once). `carried`: file field indices of the returned columns, in reply order; `filter`: the
  // request's filter, unbound.
  static arrow::Result<std::unique_ptr<LateScan>> Make(parquet::arrow::FileReader* reader,
                                                       const arrow::Schema& file_schema,
                                                       const std::vector<int>& carried,
                                                       const arrow::compute::Expression& filter,
                                                       Meter* meter);
  // The next batch's kept rows as the carried columns; a batch of zero rows (of no particular
  // columns) when none passed; null after the last batch.
  arrow::Status Next(std::shared_ptr<arrow::RecordBatch>* kept);

 private:
  LateScan() = default;
  // The next batch of the early columns (opening the next row group's readers, its late columns
  // too once the late scan is chosen); null at the end.
  arrow::Status ReadEarly(std::shared_ptr<arrow::RecordBatch>* batch);
  // Open the current row group's late columns (each reads its column chunk).
  void OpenLate();
  // The rows of an early batch that pass the filter, ascending.
  arrow::Status Mask(const arrow::RecordBatch& batch, std::vector<int32_t>* kept);

  parquet::arrow::FileReader* reader_ = nullptr;
  Meter* meter_ = nullptr;
  std::shared_ptr<arrow::Schema> carry_schema_;
  std::vector<int> early_leaves_;            // filter columns and the carried ones not read late
  arrow::compute::Expression filter_;        // bound to the early batches' schema
  std::vector<int> early_carried_;           // per carried column: its position in an early batch, or -1
  std::vector<int> late_fields_;             // file field index of each late column
  std::vector<std::shared_ptr<arrow::DataType>> late_types_;
  std::vector<int> late_slot_;               // per late column: its position among the carried
  int row_group_ = -1;
  bool late_chosen_ = false;                 // the first batch chose the late scan: open late columns
  std::unique_ptr<arrow::RecordBatchReader> early_;
  std::vector<std::unique_ptr<LateColumn>> late_;
  std::shared_ptr<arrow::RecordBatch> first_;   // the batch Make read to decide, and its kept rows
  std::vector<int32_t> first_kept_;
};

}  // namespace sae::scan
