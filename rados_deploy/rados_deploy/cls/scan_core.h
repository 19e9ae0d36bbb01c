// The scan method's core, free of Ceph: parse a request (docs/protocol.md), scan a Parquet file
// in batches with a filter and a projection, and write the result as an Arrow IPC stream.
// scan.cc glues it to the OSD; tests/connector/harness.cc runs it on the shared test vectors.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <arrow/compute/expression.h>
#include <arrow/io/interfaces.h>
#include <arrow/result.h>
#include <arrow/util/compression.h>

namespace sae::scan {

// Request magic and the protocol version this build speaks (see protocol.h).
inline constexpr char kRequestMagic[4] = {'S', 'A', 'E', 'Q'};
inline constexpr char kErrorMagic[4] = {'S', 'A', 'E', 'E'};
inline constexpr uint16_t kFlagErrorsInBand = 1;
inline constexpr uint32_t kDefaultBatchRows = 65536;

// A decoded request.
struct Request {
  uint16_t version = 0;
  uint16_t flags = 0;
  arrow::Compression::type codec = arrow::Compression::UNCOMPRESSED;
  uint32_t batch_rows = kDefaultBatchRows;
  uint64_t max_reply = 0;                   // 0 = no limit
  std::vector<std::string> columns;         // empty = every column
  bool has_filter = false;
  arrow::compute::Expression filter;        // unbound; valid when has_filter
};

// An error with the errno the method returns and a one-line message for the client.
struct Error {
  int code;  // positive errno
  std::string message;
};

// Parse request bytes; on failure fill `err` (EINVAL / EPROTONOSUPPORT) and return false.
bool ParseRequest(const uint8_t* data, size_t size, Request* req, Error* err);

// Scan a Parquet file: read projection ∪ filter columns batch by batch, filter, project, and
// write an IPC stream. Returns the stream, or false with `err` set (EBADMSG: not Parquet,
// EINVAL: unknown column / non-boolean filter, E2BIG: reply over max_reply, EIO: Arrow failed).
bool Scan(const std::shared_ptr<arrow::io::RandomAccessFile>& file, const Request& req,
          std::shared_ptr<arrow::Buffer>* reply, Error* err);

// The object's Arrow schema (as the scan would read it) as an IPC stream without batches; false
// with `err` set (EBADMSG: not Parquet, EIO).
bool Schema(const std::shared_ptr<arrow::io::RandomAccessFile>& file, std::shared_ptr<arrow::Buffer>* reply,
            Error* err);

// The error reply: "SAEE", u32 errno, u32 length, UTF-8 message (little-endian).
std::string EncodeError(const Error& err);

}  // namespace sae::scan
