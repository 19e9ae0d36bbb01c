// The scan method's core (see scan_core.h and docs/protocol.md).
#include "scan_core.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/writer.h>
#include <arrow/util/utf8.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/exception.h>
#include <parquet/properties.h>

#include "protocol.h"

namespace cp = arrow::compute;

namespace sae::scan {
namespace {

constexpr int kMaxDepth = 64;
constexpr uint32_t kMaxBatchRows = 1u << 24;

// Bounds-checked little-endian reader over the request bytes.
class Cursor {
 public:
  Cursor(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool ok() const { return ok_; }
  size_t left() const { return n_ - off_; }
  const std::string& what() const { return what_; }

  template <typename T>
  T get(const char* name) {
    T v{};
    if (!need(sizeof(T), name)) return v;
    std::memcpy(&v, p_ + off_, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
    off_ += sizeof(T);
    return v;
  }
  std::string bytes(size_t len, const char* name) {
    if (!need(len, name)) return {};
    std::string s(reinterpret_cast<const char*>(p_ + off_), len);
    off_ += len;
    return s;
  }
  std::string text(size_t len, const char* name) {
    std::string s = bytes(len, name);
    if (ok_ && !arrow::util::ValidateUTF8(s)) fail(std::string(name) + " is not UTF-8");
    return s;
  }
  void fail(const std::string& why) {
    if (ok_) what_ = why + " at byte " + std::to_string(off_);
    ok_ = false;
  }

 private:
  bool need(size_t len, const char* name) {
    if (!ok_) return false;
    if (len > left()) {
      fail(std::string("request truncated reading ") + name);
      return false;
    }
    return true;
  }
  const uint8_t* p_;
  size_t n_;
  size_t off_ = 0;
  bool ok_ = true;
  std::string what_;
};

std::string Column(Cursor& c) {
  uint16_t len = c.get<uint16_t>("column name length");
  if (c.ok() && len == 0) c.fail("empty column name");
  return c.text(len, "column name");
}

bool Literal(Cursor& c, cp::Expression* out) {
  uint8_t type = c.get<uint8_t>("literal type");
  if (!c.ok()) return false;
  switch (type) {
    case 1: {
      uint8_t b = c.get<uint8_t>("bool literal");
      *out = cp::literal(b != 0);
      break;
    }
    case 2:
      *out = cp::literal(c.get<int64_t>("int64 literal"));
      break;
    case 3:
      *out = cp::literal(c.get<double>("float64 literal"));
      break;
    case 4: {
      uint32_t len = c.get<uint32_t>("string literal length");
      *out = cp::literal(std::make_shared<arrow::StringScalar>(c.text(len, "string literal")));
      break;
    }
    default:
      c.fail("unknown literal type " + std::to_string(type));
  }
  return c.ok();
}

const char* Comparison(uint8_t op) {
  static const char* names[] = {"equal", "not_equal", "less", "less_equal", "greater",
                                "greater_equal"};
  return op < 6 ? names[op] : nullptr;
}

bool Node(Cursor& c, int depth, cp::Expression* out) {
  if (depth > kMaxDepth) {
    c.fail("filter nested deeper than " + std::to_string(kMaxDepth));
    return false;
  }
  uint8_t tag = c.get<uint8_t>("filter node");
  if (!c.ok()) return false;
  switch (tag) {
    case 0x01:
    case 0x02: {  // AND / OR (Kleene logic, as SQL)
      uint16_t n = c.get<uint16_t>("child count");
      if (c.ok() && n == 0) c.fail("AND/OR without children");
      std::vector<cp::Expression> kids;
      for (uint16_t i = 0; c.ok() && i < n; ++i) {
        cp::Expression k;
        if (Node(c, depth + 1, &k)) kids.push_back(std::move(k));
      }
      if (!c.ok()) return false;
      *out = tag == 0x01 ? cp::and_(kids) : cp::or_(kids);
      return true;
    }
    case 0x03: {  // NOT
      cp::Expression k;
      if (!Node(c, depth + 1, &k)) return false;
      *out = cp::not_(std::move(k));
      return true;
    }
    case 0x10: {  // comparison
      uint8_t op = c.get<uint8_t>("comparison operator");
      const char* fn = Comparison(op);
      if (c.ok() && !fn) c.fail("unknown comparison operator " + std::to_string(op));
      std::string col = Column(c);
      cp::Expression lit;
      if (!c.ok() || !Literal(c, &lit)) return false;
      *out = cp::call(fn, {cp::field_ref(col), lit});
      return true;
    }
    case 0x11:
    case 0x12: {  // IS NULL / IS NOT NULL
      std::string col = Column(c);
      if (!c.ok()) return false;
      *out = tag == 0x11 ? cp::call("is_null", {cp::field_ref(col)}, cp::NullOptions(false))
                         : cp::call("is_valid", {cp::field_ref(col)});
      return true;
    }
    case 0x13: {  // IN: OR of equalities, so NULLs behave as in SQL
      std::string col = Column(c);
      uint16_t n = c.get<uint16_t>("IN value count");
      if (c.ok() && n == 0) c.fail("IN without values");
      std::vector<cp::Expression> eqs;
      for (uint16_t i = 0; c.ok() && i < n; ++i) {
        cp::Expression lit;
        if (Literal(c, &lit)) eqs.push_back(cp::call("equal", {cp::field_ref(col), lit}));
      }
      if (!c.ok()) return false;
      *out = cp::or_(eqs);
      return true;
    }
    case 0x14:
    case 0x15:
    case 0x16: {  // STARTS_WITH / ENDS_WITH / CONTAINS
      std::string col = Column(c);
      uint32_t len = c.get<uint32_t>("pattern length");
      std::string pattern = c.text(len, "pattern");
      if (!c.ok()) return false;
      const char* fn = tag == 0x14 ? "starts_with" : tag == 0x15 ? "ends_with" : "match_substring";
      *out = cp::call(fn, {cp::field_ref(col)}, cp::MatchSubstringOptions(pattern));
      return true;
    }
    default:
      c.fail("unknown filter node 0x" + [&] {
        char b[3];
        std::snprintf(b, sizeof b, "%02x", tag);
        return std::string(b);
      }());
      return false;
  }
}

// Leaf (Parquet column) indices of a top-level field.
void Leaves(const parquet::arrow::SchemaField& f, std::vector<int>* out) {
  if (f.column_index >= 0) out->push_back(f.column_index);
  for (const auto& child : f.children) Leaves(child, out);
}

Error Fail(int code, const std::string& what) { return Error{code, what}; }

// Open the object as Parquet (synchronous reads in the calling thread); EBADMSG if it is not.
bool OpenParquet(const std::shared_ptr<arrow::io::RandomAccessFile>& file, uint32_t batch_rows,
                 std::unique_ptr<parquet::arrow::FileReader>* reader,
                 std::shared_ptr<arrow::Schema>* schema, Error* err) {
  arrow::MemoryPool* pool = arrow::system_memory_pool();
  parquet::ReaderProperties props(pool);
  parquet::ArrowReaderProperties aprops(/*use_threads=*/false);
  aprops.set_pre_buffer(false);  // read synchronously, in the calling (OSD op) thread
  aprops.set_batch_size(batch_rows);
  parquet::arrow::FileReaderBuilder builder;
  arrow::Status st;
  try {
    st = builder.Open(file, props);
  } catch (const parquet::ParquetException& e) {
    st = arrow::Status::Invalid(e.what());
  }
  if (!st.ok()) {
    *err = Fail(EBADMSG, "object is not a Parquet file: " + st.message());
    return false;
  }
  builder.memory_pool(pool)->properties(aprops);
  auto built = builder.Build();
  if (!built.ok()) {
    *err = Fail(EBADMSG, "object is not a Parquet file: " + built.status().message());
    return false;
  }
  *reader = std::move(*built);
  if (auto s = (*reader)->GetSchema(schema); !s.ok()) {
    *err = Fail(EBADMSG, "unreadable Parquet schema: " + s.message());
    return false;
  }
  return true;
}

// An IPC stream writer into a growing buffer.
struct Sink {
  std::shared_ptr<arrow::io::BufferOutputStream> out;
  std::shared_ptr<arrow::ipc::RecordBatchWriter> writer;
};

bool OpenSink(const std::shared_ptr<arrow::Schema>& schema, arrow::Compression::type codec, Sink* sink,
              Error* err) {
  arrow::MemoryPool* pool = arrow::system_memory_pool();
  arrow::ipc::IpcWriteOptions wopts = arrow::ipc::IpcWriteOptions::Defaults();
  wopts.memory_pool = pool;
  if (codec != arrow::Compression::UNCOMPRESSED) {
    auto c = arrow::util::Codec::Create(codec);
    if (!c.ok()) {
      *err = Fail(EINVAL, "compression unavailable: " + c.status().message());
      return false;
    }
    wopts.codec = std::shared_ptr<arrow::util::Codec>(std::move(*c));
  }
  auto out = arrow::io::BufferOutputStream::Create(1 << 16, pool);
  if (!out.ok()) {
    *err = Fail(EIO, out.status().message());
    return false;
  }
  auto writer = arrow::ipc::MakeStreamWriter(*out, schema, wopts);
  if (!writer.ok()) {
    *err = Fail(EIO, writer.status().message());
    return false;
  }
  sink->out = *out;
  sink->writer = *writer;
  return true;
}

bool ScanImpl(const std::shared_ptr<arrow::io::RandomAccessFile>& file, const Request& req,
              std::shared_ptr<arrow::Buffer>* reply, Error* err) {
  std::unique_ptr<parquet::arrow::FileReader> reader;
  std::shared_ptr<arrow::Schema> file_schema;
  if (!OpenParquet(file, req.batch_rows, &reader, &file_schema, err)) return false;

  auto unknown = [&](const std::string& name) {
    std::string have;
    for (const auto& f : file_schema->fields()) have += (have.empty() ? "" : ", ") + f->name();
    *err = Fail(EINVAL, "unknown column '" + name + "' (object has: " + have + ")");
    return false;
  };

  // Columns to read: projection (or all), then filter-only columns.
  std::vector<std::string> out_names = req.columns;
  if (out_names.empty())
    for (const auto& f : file_schema->fields()) out_names.push_back(f->name());
  std::vector<std::string> read_names = out_names;
  std::set<std::string> seen(read_names.begin(), read_names.end());
  if (seen.size() != read_names.size()) {
    *err = Fail(EINVAL, "a column is requested twice");
    return false;
  }
  if (req.has_filter) {
    for (const auto& ref : cp::FieldsInExpression(req.filter)) {
      const std::string* name = ref.name();
      if (name && seen.insert(*name).second) read_names.push_back(*name);
    }
  }
  std::vector<int> field_idx, leaves;
  for (const auto& name : read_names) {
    int i = file_schema->GetFieldIndex(name);
    if (i < 0) return unknown(name);
    field_idx.push_back(i);
  }
  // The batch reader yields fields in file order; remember where each output column lands.
  std::vector<int> sorted = field_idx;
  std::sort(sorted.begin(), sorted.end());
  for (int i : sorted) Leaves(reader->manifest().schema_fields[i], &leaves);
  std::vector<arrow::FieldVector::value_type> read_fields;
  for (int i : sorted) read_fields.push_back(file_schema->field(i));
  auto read_schema = arrow::schema(read_fields);
  std::vector<int> out_pos;
  for (const auto& name : out_names) out_pos.push_back(read_schema->GetFieldIndex(name));
  arrow::FieldVector out_fields;
  for (int p : out_pos) out_fields.push_back(read_schema->field(p));
  auto out_schema = arrow::schema(out_fields);

  cp::Expression bound;
  if (req.has_filter) {
    auto b = req.filter.Bind(*read_schema);
    if (!b.ok()) {
      *err = Fail(EINVAL, "filter does not apply to the object's columns: " + b.status().message());
      return false;
    }
    bound = *b;
    if (bound.type()->id() != arrow::Type::BOOL) {
      *err = Fail(EINVAL, "filter is not boolean but " + bound.type()->ToString());
      return false;
    }
  }

  std::vector<int> row_groups(reader->num_row_groups());
  for (size_t i = 0; i < row_groups.size(); ++i) row_groups[i] = static_cast<int>(i);
  auto batches = reader->GetRecordBatchReader(row_groups, leaves);
  if (!batches.ok()) {
    *err = Fail(EIO, "cannot read the Parquet object: " + batches.status().message());
    return false;
  }

  Sink sink;
  if (!OpenSink(out_schema, req.codec, &sink, err)) return false;
  auto io_error = [&](const arrow::Status& st) {
    *err = Fail(EIO, "scan failed: " + st.ToString());
    return false;
  };
  auto too_big = [&]() -> bool {
    auto pos = sink.out->Tell();
    return req.max_reply && pos.ok() && static_cast<uint64_t>(*pos) > req.max_reply;
  };

  // Per batch: evaluate the filter on the read columns, then touch only the returned ones:
  // no Filter call when every row passes, none of the filter-only columns are compacted.
  std::shared_ptr<arrow::RecordBatch> batch;
  while (true) {
    if (auto st = (*batches)->ReadNext(&batch); !st.ok()) return io_error(st);
    if (!batch) break;
    arrow::Datum mask;
    bool every_row = true;
    if (req.has_filter) {
      auto m = cp::ExecuteScalarExpression(bound, cp::ExecBatch(*batch));
      if (!m.ok()) return io_error(m.status());
      if (m->is_scalar()) {
        const auto& s = m->scalar_as<arrow::BooleanScalar>();
        if (!s.is_valid || !s.value) continue;
      } else {
        auto bits = std::static_pointer_cast<arrow::BooleanArray>(m->make_array());
        int64_t kept = bits->true_count();
        if (kept == 0) continue;
        every_row = kept == bits->length();
        mask = std::move(*m);
      }
    }
    auto projected = batch->SelectColumns(out_pos);
    if (!projected.ok()) return io_error(projected.status());
    batch = *projected;
    if (!every_row) {
      auto kept = cp::Filter(batch, mask);
      if (!kept.ok()) return io_error(kept.status());
      batch = kept->record_batch();
    }
    if (auto st = sink.writer->WriteRecordBatch(*batch); !st.ok()) return io_error(st);
    if (too_big()) break;
  }
  if (auto st = sink.writer->Close(); !st.ok()) return io_error(st);
  if (too_big()) {
    *err = Fail(E2BIG, "reply exceeds the client's limit of " + std::to_string(req.max_reply) +
                           " bytes; raise max_reply or scan fewer columns");
    return false;
  }
  auto done = sink.out->Finish();
  if (!done.ok()) return io_error(done.status());
  *reply = *done;
  return true;
}

}  // namespace

bool ParseRequest(const uint8_t* data, size_t size, Request* req, Error* err) {
  arrow::util::InitializeUTF8();  // idempotent; ValidateUTF8 needs its tables
  Cursor c(data, size);
  std::string magic = c.bytes(4, "magic");
  if (c.ok() && std::memcmp(magic.data(), kRequestMagic, 4) != 0) {
    *err = Fail(EPROTONOSUPPORT, "not a sae scan request (bad magic)");
    return false;
  }
  req->version = c.get<uint16_t>("version");
  if (c.ok() && req->version != SAE_SCAN_PROTOCOL) {
    *err = Fail(EPROTONOSUPPORT, "request protocol version " + std::to_string(req->version) +
                                     " is not supported (this class speaks " +
                                     std::to_string(SAE_SCAN_PROTOCOL) + ")");
    return false;
  }
  req->flags = c.get<uint16_t>("flags");
  if (c.ok() && (req->flags & ~kFlagErrorsInBand)) c.fail("unknown flags");
  uint8_t codec = c.get<uint8_t>("codec");
  if (c.ok()) {
    if (codec == 0) req->codec = arrow::Compression::UNCOMPRESSED;
    else if (codec == 1) req->codec = arrow::Compression::LZ4_FRAME;
    else if (codec == 2) req->codec = arrow::Compression::ZSTD;
    else c.fail("unknown codec " + std::to_string(codec));
  }
  c.bytes(3, "reserved");
  uint32_t rows = c.get<uint32_t>("batch rows");
  if (c.ok()) {
    if (rows > kMaxBatchRows) c.fail("batch rows above " + std::to_string(kMaxBatchRows));
    req->batch_rows = rows ? rows : kDefaultBatchRows;
  }
  req->max_reply = c.get<uint64_t>("max reply");
  uint16_t ncols = c.get<uint16_t>("column count");
  for (uint16_t i = 0; c.ok() && i < ncols; ++i) req->columns.push_back(Column(c));
  uint32_t flen = c.get<uint32_t>("filter length");
  if (c.ok() && flen > c.left()) c.fail("filter length beyond the request");
  if (c.ok() && flen > 0) {
    size_t before = c.left();
    req->has_filter = Node(c, 0, &req->filter);
    if (c.ok() && before - c.left() != flen) c.fail("filter length does not match its encoding");
  }
  if (c.ok() && c.left() != 0) c.fail(std::to_string(c.left()) + " trailing bytes");
  if (!c.ok()) {
    *err = Fail(EINVAL, "malformed request: " + c.what());
    return false;
  }
  return true;
}

bool Scan(const std::shared_ptr<arrow::io::RandomAccessFile>& file, const Request& req,
          std::shared_ptr<arrow::Buffer>* reply, Error* err) {
  try {
    return ScanImpl(file, req, reply, err);
  } catch (const std::exception& e) {
    *err = Fail(EIO, std::string("scan failed: ") + e.what());
    return false;
  }
}

bool Schema(const std::shared_ptr<arrow::io::RandomAccessFile>& file, std::shared_ptr<arrow::Buffer>* reply,
            Error* err) {
  try {
    std::unique_ptr<parquet::arrow::FileReader> reader;
    std::shared_ptr<arrow::Schema> schema;
    if (!OpenParquet(file, kDefaultBatchRows, &reader, &schema, err)) return false;
    Sink sink;
    if (!OpenSink(schema, arrow::Compression::UNCOMPRESSED, &sink, err)) return false;
    arrow::Status st = sink.writer->Close();
    auto done = st.ok() ? sink.out->Finish() : arrow::Result<std::shared_ptr<arrow::Buffer>>(st);
    if (!done.ok()) {
      *err = Fail(EIO, "schema failed: " + done.status().ToString());
      return false;
    }
    *reply = *done;
    return true;
  } catch (const std::exception& e) {
    *err = Fail(EIO, std::string("schema failed: ") + e.what());
    return false;
  }
}

std::string EncodeError(const Error& err) {
  std::string out(kErrorMagic, 4);
  uint32_t code = static_cast<uint32_t>(err.code), len = static_cast<uint32_t>(err.message.size());
  out.append(reinterpret_cast<const char*>(&code), 4);
  out.append(reinterpret_cast<const char*>(&len), 4);
  out += err.message;
  return out;
}

}  // namespace sae::scan
