// The OSD index (docs/protocol.md, "Index"): beside a Parquet object, the rows holding each value
// of one key column, hashed into buckets (the object's omap in an OSD, a map in the harness). The
// `index` method builds it; a scan with the index flag whose filter asks for key values (`==`, IN,
// either as one conjunct of an AND) probes only their buckets and, when no row holds them, answers
// without reading a column. The index records the object's size and footer: a scan finds a
// rewritten object's index stale and scans as without the flag; `index` rebuilds it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <arrow/compute/expression.h>
#include <arrow/io/interfaces.h>
#include <arrow/result.h>
#include <parquet/arrow/reader.h>

#include "scan_core.h"

namespace sae::scan {

// Where an object's index is kept: string values by string key.
class IndexStore {
 public:
  virtual ~IndexStore() = default;
  // The value at `key`, or nullopt when there is none.
  virtual arrow::Result<std::optional<std::string>> Get(const std::string& key) = 0;
  virtual arrow::Status Put(const std::string& key, const std::string& value) = 0;
};

// What an index build did.
struct IndexBuild {
  bool changed = false;   // false: an index of the column, up to date, was there
  uint64_t rows = 0;      // rows indexed (NULLs are not)
  uint64_t keys = 0;      // distinct values
  uint64_t buckets = 0;
  uint64_t bytes = 0;     // bytes of the index (keys and values of the store)
};

// Parse the `index` method's input (index magic, protocol version, u16 length + column name).
bool ParseIndexRequest(const uint8_t* data, size_t size, std::string* column, Error* err);

// Build the index of `column` of the Parquet object `file` into `store`, unless an up-to-date one
// is there. False with `err` set: EBADMSG (not Parquet), EINVAL (unknown column, or one of a type
// the index does not hold: floating point, nested), EIO.
bool BuildIndex(const std::shared_ptr<arrow::io::RandomAccessFile>& file, const std::string& column,
                IndexStore* store, Meter* meter, IndexBuild* out, Error* err);

// The build's reply: one JSON object (changed, rows, keys, buckets, bytes, build_ns: the call's wall time,
// the clock the header's build_ns is read on).
std::string EncodeIndexBuild(const IndexBuild& build, uint64_t build_ns);

// The rows of `reader`'s object (of `file_size` bytes) that may pass `filter` (unbound), ascending,
// by the index in `store`: nullopt when the index does not answer it (no key equality in the filter, no index of
// that column, or a stale one). An empty list: no row holds any of the keys.
arrow::Result<std::optional<std::vector<uint32_t>>> IndexedRows(parquet::arrow::FileReader* reader,
                                                                int64_t file_size, const arrow::Schema& schema,
                                                                const arrow::compute::Expression& filter,
                                                                IndexStore* store, Meter* meter);

}  // namespace sae::scan
