// Reading only the pages that hold given rows (docs/protocol.md, "Index"): when the OSD index
// names the rows of a Parquet object that may match, a reader over the same object whose column
// chunks yield only the data pages covering those rows, each chunk's dictionary page before them,
// found by the object's page index (its offset index). Every read column yields the same rows:
// the covered ranges end only where every read column's pages end. The scan then filters those
// rows as any others, so the answer is the one a whole read gives.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <arrow/io/interfaces.h>
#include <arrow/result.h>
#include <parquet/arrow/reader.h>

namespace sae::scan {

// A reader of `whole`'s object (`file`) that reads, of the Parquet columns `leaves`, only the
// pages covering `rows` (ascending row numbers of its one row group), with `whole`'s properties;
// `covered` is set to the rows those pages hold. Null when it would read as much as `whole`: more
// than one row group, a read column without an offset index, or pages covering every row.
arrow::Result<std::unique_ptr<parquet::arrow::FileReader>> PagedReader(
    const std::shared_ptr<arrow::io::RandomAccessFile>& file, parquet::arrow::FileReader* whole,
    const std::vector<int>& leaves, const std::vector<uint32_t>& rows, uint64_t* covered);

}  // namespace sae::scan
