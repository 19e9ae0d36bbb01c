// The scan method's core, free of Ceph: parse a request (docs/protocol.md), scan a Parquet file
// (or an Arrow IPC file) in batches with a filter and a projection, write the result as an Arrow IPC stream, and meter
// the call's phases. scan.cc glues it to the OSD; tests/connector/harness.cc runs it on the
// shared test vectors. Constants come from protocol.h, rendered from scan_protocol.json.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/compute/expression.h>
#include <arrow/io/interfaces.h>
#include <arrow/memory_pool.h>
#include <arrow/result.h>
#include <arrow/type_fwd.h>
#include <arrow/util/compression.h>

#include "protocol.h"

namespace parquet::arrow {
class FileReader;
struct SchemaField;
}

namespace sae::scan {

class IndexStore;

// One aggregate of an aggregate request: a function (protocol::kAgg*) and its column (empty for
// count_star).
struct Aggregate {
  uint8_t fn;
  std::string column;
};

// One sort key of a top-k request: a column, descending or ascending, NULLs first or last.
struct SortKey {
  std::string column;
  bool descending;
  bool nulls_first;
};

// A decoded request.
struct Request {
  uint16_t version = 0;
  uint16_t flags = 0;
  arrow::Compression::type codec = arrow::Compression::UNCOMPRESSED;
  uint32_t batch_rows = protocol::kDefaultBatchRows;
  uint64_t max_reply = 0;                   // 0 = no limit
  uint64_t client = 0;                      // who asks (a query); 0 = no one in particular
  std::vector<std::string> columns;         // empty = every column
  bool has_filter = false;
  arrow::compute::Expression filter;        // unbound; valid when has_filter
  std::vector<std::string> group_by;        // with the aggregate flag: the GROUP BY columns
  std::vector<Aggregate> aggregates;        // with the aggregate flag: at least one
  uint32_t limit = 0;                       // with the top-k flag: rows to return (1..kMaxLimit)
  std::vector<SortKey> order_by;            // with the top-k flag: empty = a plain LIMIT
  std::shared_ptr<arrow::Schema> csv;       // with the csv flag: the CSV object's columns, in file order
};

// An error with the errno the method returns and a one-line message for the client.
struct Error {
  int code;  // positive errno
  std::string message;
};

using Stats = std::array<uint64_t, protocol::kStatCount>;

// One call's measurements: CPU time of the calling thread charged to one phase at a time (the
// phase stats of protocol.h), counts, and at Finish the call's total CPU and wall time and how
// many calls of the class ran beside it in this process: all of them from its start, and from
// Join on its client's.
class Meter {
 public:
  Meter();
  ~Meter();
  Meter(const Meter&) = delete;
  Meter& operator=(const Meter&) = delete;
  // Count the call among its client's from now on (client 0: among no one's).
  void Join(uint64_t client);
  // Charge the CPU time since the last switch to the current phase and make `phase` current
  // (protocol::kStatCount: no phase); returns the phase that was current.
  protocol::Stat Enter(protocol::Stat phase);
  void Add(protocol::Stat stat, uint64_t value) { stats_[stat] += value; }
  // Charge the current phase, set total and wall time; the stats of the call.
  const Stats& Finish();
  const Stats& stats() const { return stats_; }

 private:
  void Leave(uint64_t now);   // stop counting the call; sets the calls stats

  Stats stats_{};
  protocol::Stat current_ = protocol::kStatCount;
  uint64_t cpu_start_, wall_start_, last_;
  uint64_t client_ = 0;
  uint64_t all_mark_, own_mark_ = 0;   // the running integrals (calls x ns) when the call was counted
  bool counted_ = true;                // still counted (until Finish or destruction)
};

// Charges its scope to a phase, then returns to the phase before it.
class Phase {
 public:
  Phase(Meter* meter, protocol::Stat phase) : meter_(meter), before_(meter->Enter(phase)) {}
  ~Phase() { meter_->Enter(before_); }
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;

 private:
  Meter* meter_;
  protocol::Stat before_;
};

// Appends the leaf (Parquet column) indices of a field, in order.
void Leaves(const parquet::arrow::SchemaField& field, std::vector<int>* out);

// The memory pool every scan allocates from: Arrow's mimalloc (it grows and shrinks the reader's
// buffers in place where glibc's malloc, the OSD's, copies them), else the system allocator.
arrow::MemoryPool* Pool();

// Open the object as Parquet, reading synchronously in the calling (OSD op) thread: no reader
// threads, no pre-buffering; EBADMSG if it is not Parquet.
bool OpenParquet(const std::shared_ptr<arrow::io::RandomAccessFile>& file, uint32_t batch_rows,
                 std::unique_ptr<parquet::arrow::FileReader>* reader, std::shared_ptr<arrow::Schema>* schema,
                 Error* err);

// Parse request bytes; on failure fill `err` (EINVAL / EPROTONOSUPPORT) and return false.
bool ParseRequest(const uint8_t* data, size_t size, Request* req, Error* err);

// Count the call among its client's calls (`meter`), then scan a Parquet file, an Arrow IPC
// file (its record batches cut into batches of the request's rows; no statistics, late reads or
// whole objects) or, with the csv flag, a CSV file of the
// request's schema (header line skipped, columns by position, parsed whole in the calling thread,
// then cut as IPC batches are): read projection ∪ filter columns batch by
// batch, filter, project, and
// write an IPC stream to `out` (*body = kBodyArrowIpc), metering reads (through `file`),
// decoding, filtering, projection, aggregation, sorting, IPC encoding and compression into `meter`. With
// the whole-object flag, a request for every column of an object whose every row passes gets the
// file itself instead (*body = kBodyParquet): no decoding and re-encoding of what passes whole.
// With the aggregate flag, the kept rows are grouped and aggregated (scan_aggregate.h) and the
// stream holds one batch of groups. With the top-k flag, only the first `limit` kept rows in the
// request's order and their ties (scan_topk.h), or the first `limit` in file order without sort
// keys. With the index flag and an `index` (a Parquet object's, scan_index.h), an object whose
// index holds none of the filter's keys is answered without reading a column, and of one that
// holds them only the pages with their rows are read where it has a page index (scan_pages.h). True when the
// reply is complete; else false with `err` set (EBADMSG: neither Parquet nor an Arrow IPC file,
// EINVAL: unknown column / a filter that is not boolean or does not run on the columns' types /
// a column that cannot be grouped, aggregated or sorted by, EOVERFLOW: an integer sum over 64
// bits, E2BIG: reply over max_reply, EIO: Arrow failed) and `out` holding a partial stream.
bool Scan(const std::shared_ptr<arrow::io::RandomAccessFile>& file, const Request& req, Meter* meter,
          const std::shared_ptr<arrow::io::OutputStream>& out, uint16_t* body, Error* err,
          IndexStore* index = nullptr);

// The object's Arrow schema (as the scan would read it) as an IPC stream without batches; false
// with `err` set (EBADMSG: neither Parquet nor an Arrow IPC file, EIO).
bool Schema(const std::shared_ptr<arrow::io::RandomAccessFile>& file, std::shared_ptr<arrow::Buffer>* reply,
            Error* err);

// The reply header that precedes a scan's body: reply magic, u16 stat count, u16 body format,
// the stats as u64 in protocol order.
std::string EncodeReplyHeader(const Stats& stats, uint16_t body);

// The error reply: error magic, u32 errno, u32 length, UTF-8 message.
std::string EncodeError(const Error& err);

}  // namespace sae::scan
