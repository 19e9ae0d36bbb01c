// The scan method's core (see scan_core.h and docs/protocol.md).
#include "scan_core.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <ctime>

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <arrow/csv/api.h>
#include <arrow/io/memory.h>
#include <arrow/ipc/reader.h>
#include <arrow/ipc/writer.h>
#include <arrow/util/utf8.h>
#include <parquet/arrow/reader.h>
#include <parquet/arrow/schema.h>
#include <parquet/exception.h>
#include <parquet/properties.h>
#include <parquet/statistics.h>

#include "scan_aggregate.h"
#include "scan_index.h"
#include "scan_pages.h"
#include "scan_late.h"
#include "scan_topk.h"

namespace cp = arrow::compute;

namespace sae::scan {
namespace {

namespace pr = sae::protocol;

uint64_t Clock(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t CpuNow() { return Clock(CLOCK_THREAD_CPUTIME_ID); }

// Calls of the class running in this process, counted with the count's integral over time (calls
// x ns): how much the integral grows while a call runs is the number of calls beside it (itself
// included) integrated over its wall time.
struct Tally {
  uint64_t calls = 0, integral = 0, last = 0;
  uint64_t Advance(uint64_t now) {
    integral += calls * (now - last);
    last = now;
    return integral;
  }
};

struct Running {
  std::mutex mu;
  Tally all;
  std::unordered_map<uint64_t, Tally> by_client;   // only clients with a call running
};

Running& Calls() {
  static Running* const running = new Running;   // never destroyed: op threads may outlive static destructors
  return *running;
}

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

std::shared_ptr<arrow::Scalar> Literal(Cursor& c) {
  uint8_t type = c.get<uint8_t>("literal type");
  if (!c.ok()) return nullptr;
  std::shared_ptr<arrow::Scalar> out;
  switch (type) {
    case pr::kLiteralBool:
      out = arrow::MakeScalar(c.get<uint8_t>("bool literal") != 0);
      break;
    case pr::kLiteralInt64:
      out = arrow::MakeScalar(c.get<int64_t>("int64 literal"));
      break;
    case pr::kLiteralFloat64:
      out = arrow::MakeScalar(c.get<double>("float64 literal"));
      break;
    case pr::kLiteralString: {
      uint32_t len = c.get<uint32_t>("string literal length");
      out = std::make_shared<arrow::StringScalar>(c.text(len, "string literal"));
      break;
    }
    case pr::kLiteralTimestampUs:   // a wall-clock time; Arrow compares it with a column of any unit, no zone
      out = std::make_shared<arrow::TimestampScalar>(c.get<int64_t>("timestamp literal"),
                                                     arrow::timestamp(arrow::TimeUnit::MICRO));
      break;
    case pr::kLiteralTimestampUsUtc:   // an instant; with a column of any unit and zone
      out = std::make_shared<arrow::TimestampScalar>(c.get<int64_t>("timestamp literal"),
                                                     arrow::timestamp(arrow::TimeUnit::MICRO, "UTC"));
      break;
    default:
      c.fail("unknown literal type " + std::to_string(type));
  }
  return c.ok() ? out : nullptr;
}

// `column IN (values)`: NULL for a NULL row (as SQL's IN with a list of no NULLs), else one
// `is_in` per literal type, ORed when the list mixes types. A hash lookup per row however long the
// list, and no chain of equalities for Arrow to recurse through; values compare as `equal` does.
// The same expression as the Python codec's (protocol.to_expression), so the two print alike.
arrow::Result<cp::Expression> InList(const std::string& column, const arrow::ScalarVector& values) {
  std::map<std::string, arrow::ScalarVector> by_type;
  for (const auto& v : values) by_type[v->type->ToString()].push_back(v);
  std::vector<cp::Expression> lookups;
  for (const auto& [_, same] : by_type) {
    ARROW_ASSIGN_OR_RAISE(auto builder, arrow::MakeBuilder(same.front()->type));
    ARROW_RETURN_NOT_OK(builder->AppendScalars(same));
    ARROW_ASSIGN_OR_RAISE(auto set, builder->Finish());
    lookups.push_back(cp::call("is_in", {cp::field_ref(column)}, cp::SetLookupOptions(set)));
  }
  cp::Expression found = lookups.front();
  for (size_t i = 1; i < lookups.size(); ++i) found = cp::or_(found, lookups[i]);
  return cp::call("if_else", {cp::call("is_null", {cp::field_ref(column)}, cp::NullOptions(false)),
                              cp::literal(arrow::MakeNullScalar(arrow::boolean())), std::move(found)});
}

// The Arrow function of each comparison operator, in the protocol's cmp_ops order.
const char* Comparison(uint8_t op) {
  static const char* names[] = {"equal", "not_equal", "less", "less_equal", "greater",
                                "greater_equal"};
  static_assert(sizeof(names) / sizeof(names[0]) == pr::kCmpOpCount, "cmp_ops changed in scan_protocol.json");
  return op < pr::kCmpOpCount ? names[op] : nullptr;
}

// One filter node and its children; `nodes` counts those read so far (an IN list is one node):
// Arrow chains an AND or OR of n children n deep, so their number is bounded as the depth is.
bool Node(Cursor& c, int depth, int* nodes, cp::Expression* out) {
  if (depth > pr::kMaxFilterDepth) {
    c.fail("filter nested deeper than " + std::to_string(pr::kMaxFilterDepth));
    return false;
  }
  if (++*nodes > pr::kMaxFilterNodes) {
    c.fail("filter has more than " + std::to_string(pr::kMaxFilterNodes) + " nodes");
    return false;
  }
  uint8_t tag = c.get<uint8_t>("filter node");
  if (!c.ok()) return false;
  switch (tag) {
    case pr::kNodeAnd:
    case pr::kNodeOr: {  // Kleene logic, as SQL
      uint16_t n = c.get<uint16_t>("child count");
      if (c.ok() && n == 0) c.fail("AND/OR without children");
      std::vector<cp::Expression> kids;
      for (uint16_t i = 0; c.ok() && i < n; ++i) {
        cp::Expression k;
        if (Node(c, depth + 1, nodes, &k)) kids.push_back(std::move(k));
      }
      if (!c.ok()) return false;
      *out = tag == pr::kNodeAnd ? cp::and_(kids) : cp::or_(kids);
      return true;
    }
    case pr::kNodeNot: {
      cp::Expression k;
      if (!Node(c, depth + 1, nodes, &k)) return false;
      *out = cp::not_(std::move(k));
      return true;
    }
    case pr::kNodeCmp: {
      uint8_t op = c.get<uint8_t>("comparison operator");
      const char* fn = Comparison(op);
      if (c.ok() && !fn) c.fail("unknown comparison operator " + std::to_string(op));
      std::string col = Column(c);
      std::shared_ptr<arrow::Scalar> lit = c.ok() ? Literal(c) : nullptr;
      if (!lit) return false;
      *out = cp::call(fn, {cp::field_ref(col), cp::literal(std::move(lit))});
      return true;
    }
    case pr::kNodeIsNull:
    case pr::kNodeIsNotNull: {
      std::string col = Column(c);
      if (!c.ok()) return false;
      *out = tag == pr::kNodeIsNull ? cp::call("is_null", {cp::field_ref(col)}, cp::NullOptions(false))
                         : cp::call("is_valid", {cp::field_ref(col)});
      return true;
    }
    case pr::kNodeIn: {
      std::string col = Column(c);
      uint16_t n = c.get<uint16_t>("IN value count");
      if (c.ok() && n == 0) c.fail("IN without values");
      arrow::ScalarVector values;
      for (uint16_t i = 0; c.ok() && i < n; ++i)
        if (auto v = Literal(c)) values.push_back(std::move(v));
      if (!c.ok()) return false;
      auto in = InList(col, values);
      if (!in.ok()) {
        c.fail("IN list: " + in.status().message());
        return false;
      }
      *out = std::move(*in);
      return true;
    }
    case pr::kNodeStartsWith:
    case pr::kNodeEndsWith:
    case pr::kNodeContains: {
      std::string col = Column(c);
      uint32_t len = c.get<uint32_t>("pattern length");
      std::string pattern = c.text(len, "pattern");
      if (!c.ok()) return false;
      const char* fn = tag == pr::kNodeStartsWith ? "starts_with"
                       : tag == pr::kNodeEndsWith ? "ends_with"
                                                  : "match_substring";
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

// The aggregate section: group columns, then aggregates (function code, column unless count_star).
void Aggregates(Cursor& c, Request* req) {
  uint16_t groups = c.get<uint16_t>("group column count");
  if (c.ok() && groups > pr::kMaxGroupColumns) c.fail("more than " + std::to_string(pr::kMaxGroupColumns) + " group columns");
  for (uint16_t i = 0; c.ok() && i < groups; ++i) req->group_by.push_back(Column(c));
  uint16_t n = c.get<uint16_t>("aggregate count");
  if (c.ok() && (n == 0 || n > pr::kMaxAggregates)) c.fail("aggregate count not in 1.." + std::to_string(pr::kMaxAggregates));
  for (uint16_t i = 0; c.ok() && i < n; ++i) {
    uint8_t fn = c.get<uint8_t>("aggregate function");
    if (c.ok() && fn >= pr::kAggFunctionCount) c.fail("unknown aggregate function " + std::to_string(fn));
    std::string column = c.ok() && fn != pr::kAggCountStar ? Column(c) : "";
    if (c.ok()) req->aggregates.push_back(Aggregate{fn, std::move(column)});
  }
}

// The top-k section: limit, then sort keys (column, key flags).
void SortKeys(Cursor& c, Request* req) {
  req->limit = c.get<uint32_t>("limit");
  if (c.ok() && (req->limit == 0 || req->limit > pr::kMaxLimit)) c.fail("limit not in 1.." + std::to_string(pr::kMaxLimit));
  uint16_t n = c.get<uint16_t>("sort key count");
  if (c.ok() && n > pr::kMaxSortKeys) c.fail("more than " + std::to_string(pr::kMaxSortKeys) + " sort keys");
  for (uint16_t i = 0; c.ok() && i < n; ++i) {
    std::string column = Column(c);
    uint8_t flags = c.get<uint8_t>("sort key flags");
    if (c.ok() && (flags & ~pr::kKnownKeyFlags)) c.fail("unknown sort key flags " + std::to_string(flags));
    if (c.ok()) req->order_by.push_back(SortKey{std::move(column), bool(flags & pr::kKeyDescending),
                                                bool(flags & pr::kKeyNullsFirst)});
  }
}

// The csv section: u32 length + an Arrow IPC schema message (the CSV object's columns).
void CsvSchema(Cursor& c, Request* req) {
  uint32_t len = c.get<uint32_t>("csv schema length");
  if (c.ok() && len > c.left()) c.fail("csv schema length beyond the request");
  std::string bytes = c.bytes(len, "csv schema");
  if (!c.ok()) return;
  arrow::io::BufferReader in(arrow::Buffer::FromString(std::move(bytes)));
  arrow::ipc::DictionaryMemo memo;
  auto schema = arrow::ipc::ReadSchema(&in, &memo);
  if (!schema.ok()) return c.fail("csv schema is not an Arrow IPC schema message: " + schema.status().message());
  if ((*schema)->num_fields() == 0) return c.fail("csv schema has no columns");
  std::set<std::string> names;
  for (const auto& f : (*schema)->fields()) {
    if (f->name().empty() || !names.insert(f->name()).second) return c.fail("csv schema names '" + f->name() + "' twice or empty");
  }
  req->csv = *schema;
}

}  // namespace

void Leaves(const parquet::arrow::SchemaField& f, std::vector<int>* out) {
  if (f.column_index >= 0) out->push_back(f.column_index);
  for (const auto& child : f.children) Leaves(child, out);
}

namespace {

Error Fail(int code, const std::string& what) { return Error{code, what}; }

// The file as the scan reads it: every read charged to the read phase and counted.
class MeteredFile : public arrow::io::RandomAccessFile {
 public:
  MeteredFile(std::shared_ptr<arrow::io::RandomAccessFile> file, Meter* meter)
      : file_(std::move(file)), meter_(meter) {}

  arrow::Status Close() override { return file_->Close(); }
  bool closed() const override { return file_->closed(); }
  arrow::Result<int64_t> Tell() const override { return file_->Tell(); }
  arrow::Result<int64_t> GetSize() override { return file_->GetSize(); }
  arrow::Status Seek(int64_t position) override { return file_->Seek(position); }
  arrow::Result<int64_t> Read(int64_t nbytes, void* out) override {
    Phase p(meter_, pr::kReadNs);
    return Count(file_->Read(nbytes, out));
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(int64_t nbytes) override {
    Phase p(meter_, pr::kReadNs);
    return Count(file_->Read(nbytes));
  }
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, void* out) override {
    Phase p(meter_, pr::kReadNs);
    return Count(file_->ReadAt(position, nbytes, out));
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes) override {
    Phase p(meter_, pr::kReadNs);
    return Count(file_->ReadAt(position, nbytes));
  }

 private:
  arrow::Result<int64_t> Count(arrow::Result<int64_t> n) {
    if (n.ok()) Counted(*n);
    return n;
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Count(arrow::Result<std::shared_ptr<arrow::Buffer>> b) {
    if (b.ok()) Counted((*b)->size());
    return b;
  }
  void Counted(int64_t n) {
    meter_->Add(pr::kReadCalls, 1);
    meter_->Add(pr::kReadBytes, static_cast<uint64_t>(n));
  }
  std::shared_ptr<arrow::io::RandomAccessFile> file_;
  Meter* meter_;
};

// A codec that charges its compression to the compress phase.
class MeteredCodec : public arrow::util::Codec {
 public:
  MeteredCodec(std::unique_ptr<arrow::util::Codec> codec, Meter* meter) : codec_(std::move(codec)), meter_(meter) {}

  int minimum_compression_level() const override { return codec_->minimum_compression_level(); }
  int maximum_compression_level() const override { return codec_->maximum_compression_level(); }
  int default_compression_level() const override { return codec_->default_compression_level(); }
  int compression_level() const override { return codec_->compression_level(); }
  arrow::Compression::type compression_type() const override { return codec_->compression_type(); }
  arrow::Result<int64_t> Decompress(int64_t input_len, const uint8_t* input, int64_t output_len,
                                    uint8_t* output) override {
    return codec_->Decompress(input_len, input, output_len, output);
  }
  arrow::Result<int64_t> Compress(int64_t input_len, const uint8_t* input, int64_t output_len,
                                  uint8_t* output) override {
    Phase p(meter_, pr::kCompressNs);
    return codec_->Compress(input_len, input, output_len, output);
  }
  int64_t MaxCompressedLen(int64_t input_len, const uint8_t* input) override {
    return codec_->MaxCompressedLen(input_len, input);
  }
  arrow::Result<std::shared_ptr<arrow::util::Compressor>> MakeCompressor() override {
    return codec_->MakeCompressor();
  }
  arrow::Result<std::shared_ptr<arrow::util::Decompressor>> MakeDecompressor() override {
    return codec_->MakeDecompressor();
  }

 private:
  std::unique_ptr<arrow::util::Codec> codec_;
  Meter* meter_;
};

// The bytes first read from an object's end for its footer (Arrow's default, 64 KiB, reads more than
// a taxi object's ~5 KiB footer; a larger footer costs one more read): an object the OSD index
// answers unread costs this much.
constexpr size_t kFooterReadBytes = 16 << 10;

}  // namespace

bool OpenParquet(const std::shared_ptr<arrow::io::RandomAccessFile>& file, uint32_t batch_rows,
                 std::unique_ptr<parquet::arrow::FileReader>* reader,
                 std::shared_ptr<arrow::Schema>* schema, Error* err) {
  arrow::MemoryPool* pool = Pool();
  parquet::ReaderProperties props(pool);
  props.set_footer_read_size(kFooterReadBytes);
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
    *err = Fail(EBADMSG, "object is not a Parquet file (nor an Arrow IPC file): " + st.message());
    return false;
  }
  builder.memory_pool(pool)->properties(aprops);
  auto built = builder.Build();
  if (!built.ok()) {
    *err = Fail(EBADMSG, "object is not a Parquet file (nor an Arrow IPC file): " + built.status().message());
    return false;
  }
  *reader = std::move(*built);
  if (auto s = (*reader)->GetSchema(schema); !s.ok()) {
    *err = Fail(EBADMSG, "unreadable Parquet schema: " + s.message());
    return false;
  }
  return true;
}

namespace {

// An object as stored: a Parquet file or an Arrow IPC file (told apart by the IPC file's magic),
// or a CSV file (the request says so, and gives its schema).
struct Stored {
  std::unique_ptr<parquet::arrow::FileReader> parquet;  // set for a Parquet object
  std::shared_ptr<arrow::ipc::RecordBatchFileReader> ipc;  // set for an IPC file: every field
  bool csv = false;
  std::shared_ptr<arrow::Schema> schema;
};

// Open an IPC file reading the top-level fields `fields` (empty: every field), in the calling thread.
arrow::Result<std::shared_ptr<arrow::ipc::RecordBatchFileReader>> OpenIpc(
    const std::shared_ptr<arrow::io::RandomAccessFile>& file, const std::vector<int>& fields) {
  auto options = arrow::ipc::IpcReadOptions::Defaults();
  options.memory_pool = Pool();
  options.use_threads = false;  // decompress in the calling (OSD op) thread
  options.included_fields = fields;
  return arrow::ipc::RecordBatchFileReader::Open(file, options);
}

bool OpenStored(const std::shared_ptr<arrow::io::RandomAccessFile>& file, uint32_t batch_rows,
                const std::shared_ptr<arrow::Schema>& csv, Stored* stored, Error* err) {
  if (csv) {
    stored->csv = true;
    stored->schema = csv;
    return true;
  }
  static constexpr char kIpcMagic[] = "ARROW1";
  auto head = file->ReadAt(0, sizeof(kIpcMagic) - 1);
  if (head.ok() && (*head)->size() == static_cast<int64_t>(sizeof(kIpcMagic) - 1) &&
      std::memcmp((*head)->data(), kIpcMagic, sizeof(kIpcMagic) - 1) == 0) {
    auto opened = OpenIpc(file, {});
    if (!opened.ok()) {
      *err = Fail(EBADMSG, "object is not a readable Arrow IPC file: " + opened.status().message());
      return false;
    }
    stored->ipc = *opened;
    stored->schema = stored->ipc->schema();
    return true;
  }
  return OpenParquet(file, batch_rows, &stored->parquet, &stored->schema, err);
}

// The field an IPC read of no field reads instead (Arrow reads every field when none is named):
// the narrowest fixed-width one, else the first.
int NarrowestField(const arrow::Schema& schema) {
  int best = 0, best_width = INT_MAX;
  for (int i = 0; i < schema.num_fields(); ++i) {
    const auto* fixed = dynamic_cast<const arrow::FixedWidthType*>(schema.field(i)->type().get());
    if (fixed != nullptr && fixed->bit_width() > 0 && fixed->bit_width() < best_width) {
      best = i;
      best_width = fixed->bit_width();
    }
  }
  return best;
}

// Whole record batches (from `next`, null at the end) cut into batches of at most `rows` rows
// (slices: no copies), as `schema`'s columns (none: the batches keep only their row counts).
class SlicedBatches : public arrow::RecordBatchReader {
 public:
  using Source = std::function<arrow::Result<std::shared_ptr<arrow::RecordBatch>>()>;
  SlicedBatches(Source next, std::shared_ptr<arrow::Schema> schema, int64_t rows)
      : next_(std::move(next)), schema_(std::move(schema)), rows_(rows) {}
  std::shared_ptr<arrow::Schema> schema() const override { return schema_; }
  arrow::Status ReadNext(std::shared_ptr<arrow::RecordBatch>* out) override {
    while (!current_ || offset_ >= current_->num_rows()) {
      ARROW_ASSIGN_OR_RAISE(current_, next_());
      offset_ = 0;
      if (!current_) {
        *out = nullptr;
        return arrow::Status::OK();
      }
    }
    *out = current_->Slice(offset_, rows_);
    offset_ += (*out)->num_rows();
    if (schema_->num_fields() == 0) *out = arrow::RecordBatch::Make(schema_, (*out)->num_rows(), arrow::ArrayVector{});
    return arrow::Status::OK();
  }

 private:
  Source next_;
  std::shared_ptr<arrow::Schema> schema_;
  int64_t rows_;
  std::shared_ptr<arrow::RecordBatch> current_;
  int64_t offset_ = 0;
};

// An IPC file's record batches, one by one.
SlicedBatches::Source IpcSource(std::shared_ptr<arrow::ipc::RecordBatchFileReader> file) {
  return [file = std::move(file), next = 0]() mutable -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
    if (next >= file->num_record_batches()) return nullptr;
    return file->ReadRecordBatch(next++);
  };
}

// A CSV object of `schema`'s columns (a header line, then rows as Spark's CSV reader reads them:
// an empty field, quoted or not, is NULL), read whole and parsed by Arrow's serial reader in the
// calling thread on the first call, `fields` of it (schema positions, ascending) as batches.
SlicedBatches::Source CsvSource(std::shared_ptr<arrow::io::RandomAccessFile> file, std::shared_ptr<arrow::Schema> schema,
                                std::vector<int> fields) {
  return [file = std::move(file), schema = std::move(schema), fields = std::move(fields),
          table = std::shared_ptr<arrow::TableBatchReader>()]() mutable
             -> arrow::Result<std::shared_ptr<arrow::RecordBatch>> {
    if (!table) {
      ARROW_ASSIGN_OR_RAISE(int64_t size, file->GetSize());
      ARROW_ASSIGN_OR_RAISE(auto whole, file->ReadAt(0, size));   // the object is in memory anyway
      auto read = arrow::csv::ReadOptions::Defaults();
      read.use_threads = false;
      read.skip_rows = 1;   // the header line; columns are taken by position, as Spark's CSV reader does
      read.column_names = schema->field_names();
      auto convert = arrow::csv::ConvertOptions::Defaults();
      for (const auto& f : schema->fields()) convert.column_types[f->name()] = f->type();
      for (int i : fields) convert.include_columns.push_back(schema->field(i)->name());
      convert.null_values = {""};           // Spark reads an empty field as NULL, quoted or not, and
      convert.strings_can_be_null = true;   // nothing else ("NaN" is a number, "null" a string)
      convert.quoted_strings_can_be_null = true;
      auto reader = arrow::csv::TableReader::Make(arrow::io::IOContext(Pool()),
                                                  std::make_shared<arrow::io::BufferReader>(whole), read,
                                                  arrow::csv::ParseOptions::Defaults(), convert);
      auto parsed = reader.ok() ? (*reader)->Read() : reader.status();
      if (!parsed.ok())   // a SerializationError: the scan answers EBADMSG
        return arrow::Status::SerializationError("object is not CSV of the request's schema: ", parsed.status().message());
      table = std::make_shared<arrow::TableBatchReader>(std::move(*parsed));
    }
    std::shared_ptr<arrow::RecordBatch> batch;
    ARROW_RETURN_NOT_OK(table->ReadNext(&batch));
    return batch;
  };
}

// An IPC stream writer into `out`; `meter`: charge compression to it (may be null).
bool OpenWriter(const std::shared_ptr<arrow::Schema>& schema, arrow::Compression::type codec, Meter* meter,
                const std::shared_ptr<arrow::io::OutputStream>& out,
                std::shared_ptr<arrow::ipc::RecordBatchWriter>* writer, Error* err) {
  arrow::MemoryPool* pool = Pool();
  arrow::ipc::IpcWriteOptions wopts = arrow::ipc::IpcWriteOptions::Defaults();
  wopts.memory_pool = pool;
  wopts.use_threads = false;  // compress in the calling (OSD op) thread, not Arrow's pool
  if (codec != arrow::Compression::UNCOMPRESSED) {
    auto c = arrow::util::Codec::Create(codec);
    if (!c.ok()) {
      *err = Fail(EINVAL, "compression unavailable: " + c.status().message());
      return false;
    }
    if (meter) {
      wopts.codec = std::make_shared<MeteredCodec>(std::move(*c), meter);
    } else {
      wopts.codec = std::shared_ptr<arrow::util::Codec>(std::move(*c));
    }
  }
  auto made = arrow::ipc::MakeStreamWriter(out, schema, wopts);
  if (!made.ok()) {
    *err = Fail(EIO, made.status().message());
    return false;
  }
  *writer = *made;
  return true;
}

// Whether every row of the object passes `filter` (bound to `schema`), proven cheaply: the row
// groups' statistics must already promise it (else false, at no cost), then the filter's columns
// alone are decoded and checked (statistics leave NaN out, the check does not).
arrow::Result<bool> EveryRowPasses(parquet::arrow::FileReader* reader, const arrow::Schema& schema,
                                   const cp::Expression& filter, Meter* meter) {
  auto metadata = reader->parquet_reader()->metadata();
  std::vector<int> fields, leaves;
  for (const auto& ref : cp::FieldsInExpression(filter)) {
    int i = ref.name() ? schema.GetFieldIndex(*ref.name()) : -1;
    if (i < 0 || reader->manifest().schema_fields[i].column_index < 0) return false;   // nested: no statistics
    if (std::find(fields.begin(), fields.end(), i) != fields.end()) continue;        // named twice
    fields.push_back(i);
    leaves.push_back(reader->manifest().schema_fields[i].column_index);
  }
  std::vector<cp::Expression> promised;
  for (int rg = 0; rg < metadata->num_row_groups(); ++rg) {
    for (size_t k = 0; k < fields.size(); ++k) {
      auto stats = metadata->RowGroup(rg)->ColumnChunk(leaves[k])->statistics();
      if (!stats || !stats->HasMinMax()) return false;
      std::shared_ptr<arrow::Scalar> lo, hi;
      if (!parquet::arrow::StatisticsAsScalars(*stats, &lo, &hi).ok()) return false;
      const auto& field = schema.field(fields[k]);
      auto lo_cast = lo->CastTo(field->type()), hi_cast = hi->CastTo(field->type());
      if (!lo_cast.ok() || !hi_cast.ok()) return false;
      auto ref = cp::field_ref(field->name());
      promised.push_back(cp::greater_equal(ref, cp::literal(*lo_cast)));
      promised.push_back(cp::less_equal(ref, cp::literal(*hi_cast)));
      if (stats->HasNullCount() && stats->null_count() == 0) promised.push_back(cp::call("is_valid", {ref}));
    }
  }
  ARROW_ASSIGN_OR_RAISE(auto guarantee, cp::and_(promised).Bind(schema));
  ARROW_ASSIGN_OR_RAISE(auto simplified, cp::SimplifyWithGuarantee(filter, guarantee));
  if (!simplified.IsScalarExpression() || !simplified.literal() || !simplified.literal()->is_scalar()) return false;
  const auto& promise = simplified.literal()->scalar_as<arrow::BooleanScalar>();
  if (!promise.is_valid || !promise.value) return false;
  std::vector<int> row_groups(metadata->num_row_groups()), sorted = fields;
  for (size_t i = 0; i < row_groups.size(); ++i) row_groups[i] = static_cast<int>(i);
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> sorted_leaves;
  arrow::FieldVector read_fields;
  for (int i : sorted) {
    sorted_leaves.push_back(reader->manifest().schema_fields[i].column_index);
    read_fields.push_back(schema.field(i));
  }
  ARROW_ASSIGN_OR_RAISE(auto check, filter.Bind(*arrow::schema(read_fields)));
  std::unique_ptr<arrow::RecordBatchReader> batches;
  {
    Phase p(meter, pr::kDecodeNs);
    ARROW_ASSIGN_OR_RAISE(batches, reader->GetRecordBatchReader(row_groups, sorted_leaves));
  }
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    {
      Phase p(meter, pr::kDecodeNs);
      ARROW_RETURN_NOT_OK(batches->ReadNext(&batch));
    }
    if (!batch) return true;
    meter->Add(pr::kBatchesIn, 1);
    meter->Add(pr::kRowsIn, static_cast<uint64_t>(batch->num_rows()));
    Phase p(meter, pr::kFilterNs);
    ARROW_ASSIGN_OR_RAISE(auto mask, cp::ExecuteScalarExpression(check, cp::ExecBatch(*batch)));
    if (mask.is_scalar()) {
      const auto& m = mask.scalar_as<arrow::BooleanScalar>();
      if (!m.is_valid || !m.value) return false;
    } else if (std::static_pointer_cast<arrow::BooleanArray>(mask.make_array())->true_count() != batch->num_rows()) {
      return false;
    }
  }
}

// The object as stored, into `out`.
bool WholeObject(const std::shared_ptr<arrow::io::RandomAccessFile>& file, parquet::arrow::FileReader* reader,
                 Meter* meter, const std::shared_ptr<arrow::io::OutputStream>& out, Error* err) {
  auto size = file->GetSize();
  auto data = size.ok() ? file->ReadAt(0, *size) : arrow::Result<std::shared_ptr<arrow::Buffer>>(size.status());
  arrow::Status st = data.status();
  if (st.ok()) {
    Phase p(meter, pr::kReplyNs);   // into the OSD's reply buffers
    st = out->Write(*data);
  }
  if (!st.ok()) {
    *err = Fail(EIO, "whole-object reply failed: " + st.ToString());
    return false;
  }
  uint64_t rows = static_cast<uint64_t>(reader->parquet_reader()->metadata()->num_rows());
  meter->Add(pr::kRowsOut, rows);
  meter->Add(pr::kReplyBytes, static_cast<uint64_t>(*size));
  return true;
}

bool ScanImpl(const std::shared_ptr<arrow::io::RandomAccessFile>& file, const Request& req, Meter* meter,
              const std::shared_ptr<arrow::io::OutputStream>& out, uint16_t* body, Error* err, IndexStore* index) {
  *body = pr::kBodyArrowIpc;
  Stored stored;
  {
    Phase p(meter, pr::kDecodeNs);
    if (!OpenStored(file, req.batch_rows, req.csv, &stored, err)) return false;
  }
  parquet::arrow::FileReader* reader = stored.parquet.get();   // null for an IPC or CSV file
  const std::shared_ptr<arrow::Schema>& file_schema = stored.schema;

  auto unknown = [&](const std::string& name) {
    std::string have;
    for (const auto& f : file_schema->fields()) have += (have.empty() ? "" : ", ") + f->name();
    *err = Fail(EINVAL, "unknown column '" + name + "' (object has: " + have + ")");
    return false;
  };

  // Columns to read: projection (or all; an aggregation's own), then sort-only keys (these are
  // carried past the filter), then filter-only columns.
  bool aggregate = req.flags & pr::kFlagAggregate, top_k = req.flags & pr::kFlagTopK;
  std::vector<std::string> out_names = aggregate ? AggregateColumns(req) : req.columns;
  if (out_names.empty() && !aggregate)
    for (const auto& f : file_schema->fields()) out_names.push_back(f->name());
  std::vector<std::string> read_names = out_names;
  std::set<std::string> seen(read_names.begin(), read_names.end());
  if (seen.size() != read_names.size()) {
    *err = Fail(EINVAL, "a column is requested twice");
    return false;
  }
  for (const auto& key : req.order_by) {
    if (seen.insert(key.column).second) read_names.push_back(key.column);
  }
  size_t carried_count = read_names.size();
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
  if (reader)
    for (int i : sorted) Leaves(reader->manifest().schema_fields[i], &leaves);
  std::vector<arrow::FieldVector::value_type> read_fields;
  for (int i : sorted) read_fields.push_back(file_schema->field(i));
  auto read_schema = arrow::schema(read_fields);
  std::vector<int> carry_pos;
  for (size_t i = 0; i < carried_count; ++i) carry_pos.push_back(read_schema->GetFieldIndex(read_names[i]));
  arrow::FieldVector carry_fields;
  for (int p : carry_pos) carry_fields.push_back(read_schema->field(p));
  auto carry_schema = arrow::schema(carry_fields);
  auto out_schema = arrow::schema(arrow::FieldVector(carry_fields.begin(), carry_fields.begin() + out_names.size()));
  std::unique_ptr<Aggregation> aggregation;
  if (aggregate && !Aggregation::Make(req, out_schema, &aggregation, err)) return false;
  std::unique_ptr<TopK> top;
  if (!req.order_by.empty() &&
      !TopK::Make(req, carry_schema, static_cast<int>(out_names.size()), &top, err)) return false;

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
    // Some kernels refuse their arguments only when they run (a zoned timestamp compared with a
    // zone-less one): run the filter on one row of NULLs, so such a filter is the request's error too.
    arrow::Status tried;
    std::vector<std::shared_ptr<arrow::Array>> nulls;
    for (const auto& f : read_schema->fields()) {
      auto a = arrow::MakeArrayOfNull(f->type(), 1, Pool());
      if (!a.ok()) {
        tried = a.status();
        break;
      }
      nulls.push_back(*a);
    }
    if (tried.ok()) {
      tried = cp::ExecuteScalarExpression(bound, cp::ExecBatch(*arrow::RecordBatch::Make(read_schema, 1, nulls))).status();
    }
    if (!tried.ok()) {
      *err = Fail(EINVAL, "filter does not apply to the object's columns: " + tried.message());
      return false;
    }
  }

  // With the index flag, an object whose index holds none of the filter's keys is answered
  // without reading a column (scan_index.h).
  auto size = file->GetSize();
  bool none = false;
  std::unique_ptr<parquet::arrow::FileReader> paged;
  if (reader && index && req.has_filter && (req.flags & pr::kFlagIndex) && size.ok()) {
    auto rows = IndexedRows(reader, *size, *file_schema, req.filter, index, meter);
    if (!rows.ok()) {
      *err = Fail(EIO, "index: " + rows.status().ToString());
      return false;
    }
    none = rows->has_value() && (*rows)->empty();
    if (rows->has_value() && !none) {   // a matching object: only the pages holding its rows, where the page index says which
      Phase p(meter, pr::kIndexNs);
      uint64_t covered = 0;
      auto made = PagedReader(file, reader, leaves, **rows, &covered);
      if (!made.ok()) {
        *err = Fail(EIO, "index: " + made.status().ToString());
        return false;
      }
      paged = std::move(*made);
      if (paged) reader = paged.get();
    }
  }

  // Every column asked for and every row passing: the (Parquet) object itself is the answer.
  if (reader && !none && !paged && (req.flags & pr::kFlagWholeObject) && out_names.size() == static_cast<size_t>(file_schema->num_fields()) &&
      size.ok() && (!req.max_reply || static_cast<uint64_t>(*size) <= req.max_reply)) {
    arrow::Result<bool> whole = true;
    if (req.has_filter) {
      auto full = req.filter.Bind(*file_schema);
      whole = full.ok() ? EveryRowPasses(reader, *file_schema, *full, meter) : full.status();
    }
    if (!whole.ok()) {
      *err = Fail(EIO, "scan failed: " + whole.status().ToString());
      return false;
    }
    if (*whole) {
      *body = pr::kBodyParquet;
      return WholeObject(file, reader, meter, out, err);
    }
  }

  // The kept rows, batch by batch, as the carried columns: read late where that pays (scan_late.h,
  // Parquet), else every read column at once, with the filter applied to each batch.
  std::unique_ptr<LateScan> late;
  if (req.has_filter && reader && !none) {
    std::vector<int> carried;
    for (size_t i = 0; i < carried_count; ++i) carried.push_back(file_schema->GetFieldIndex(read_names[i]));
    auto made = LateScan::Make(reader, *file_schema, carried, req.filter, meter);
    if (!made.ok()) {
      *err = Fail(EIO, "cannot read the Parquet object: " + made.status().message());
      return false;
    }
    late = std::move(*made);
  }
  std::unique_ptr<arrow::RecordBatchReader> batches;
  if (!reader) {
    std::vector<int> fields = sorted.empty() && file_schema->num_fields() > 0
                                  ? std::vector<int>{NarrowestField(*file_schema)} : sorted;
    SlicedBatches::Source source;
    if (stored.csv) {
      source = CsvSource(file, file_schema, std::move(fields));
    } else {
      Phase p(meter, pr::kDecodeNs);
      auto made = OpenIpc(file, fields);
      if (!made.ok()) {
        *err = Fail(EIO, "cannot read the Arrow IPC object: " + made.status().message());
        return false;
      }
      source = IpcSource(std::move(*made));
    }
    batches = std::make_unique<SlicedBatches>(std::move(source), read_schema, req.batch_rows);
  } else if (!late && !none) {
    std::vector<int> row_groups(reader->num_row_groups());
    for (size_t i = 0; i < row_groups.size(); ++i) row_groups[i] = static_cast<int>(i);
    Phase p(meter, pr::kDecodeNs);
    auto made = reader->GetRecordBatchReader(row_groups, leaves);
    if (!made.ok()) {
      *err = Fail(EIO, "cannot read the Parquet object: " + made.status().message());
      return false;
    }
    batches = std::move(*made);
  }
  // Per batch: evaluate the filter on the read columns, then touch only the carried ones:
  // no Filter call when every row passes, none of the filter-only columns are compacted. A batch
  // where no row passes comes back as zero rows, which the loop below skips.
  auto next_kept = [&](std::shared_ptr<arrow::RecordBatch>* kept) -> arrow::Status {
    if (none) {
      *kept = nullptr;
      return arrow::Status::OK();
    }
    if (late) return late->Next(kept);
    std::shared_ptr<arrow::RecordBatch> batch;
    {
      Phase p(meter, pr::kDecodeNs);
      ARROW_RETURN_NOT_OK(batches->ReadNext(&batch));
    }
    if (!batch) {
      *kept = nullptr;
      return arrow::Status::OK();
    }
    meter->Add(pr::kBatchesIn, 1);
    meter->Add(pr::kRowsIn, static_cast<uint64_t>(batch->num_rows()));
    arrow::Datum mask;
    bool every_row = true;
    if (req.has_filter) {
      Phase p(meter, pr::kFilterNs);
      ARROW_ASSIGN_OR_RAISE(auto m, cp::ExecuteScalarExpression(bound, cp::ExecBatch(*batch)));
      if (m.is_scalar()) {
        const auto& s = m.scalar_as<arrow::BooleanScalar>();
        if (!s.is_valid || !s.value) {
          *kept = batch->Slice(0, 0);
          return arrow::Status::OK();
        }
      } else {
        auto bits = std::static_pointer_cast<arrow::BooleanArray>(m.make_array());
        int64_t kept_rows = bits->true_count();
        if (kept_rows == 0) {
          *kept = batch->Slice(0, 0);
          return arrow::Status::OK();
        }
        every_row = kept_rows == bits->length();
        mask = std::move(m);
      }
    }
    {
      Phase p(meter, pr::kProjectNs);
      ARROW_ASSIGN_OR_RAISE(batch, batch->SelectColumns(carry_pos));
    }
    if (!every_row) {
      Phase p(meter, pr::kFilterNs);
      ARROW_ASSIGN_OR_RAISE(auto filtered, cp::Filter(batch, mask));
      batch = filtered.record_batch();
    }
    *kept = std::move(batch);
    return arrow::Status::OK();
  };

  auto begin = out->Tell();
  if (!begin.ok()) {
    *err = Fail(EIO, "reply stream: " + begin.status().message());
    return false;
  }
  std::shared_ptr<arrow::ipc::RecordBatchWriter> writer;
  {
    Phase p(meter, pr::kEncodeNs);
    if (!OpenWriter(aggregation ? aggregation->schema() : out_schema, req.codec, meter, out, &writer, err)) return false;
  }
  auto io_error = [&](const arrow::Status& st) {
    if (st.IsSerializationError()) *err = Fail(EBADMSG, st.message());
    else *err = Fail(EIO, "scan failed: " + st.ToString());
    return false;
  };
  auto written = [&]() -> uint64_t {
    auto pos = out->Tell();
    return pos.ok() ? static_cast<uint64_t>(*pos - *begin) : 0;
  };
  auto too_big = [&]() -> bool { return req.max_reply && written() > req.max_reply; };

  // Kept rows wait until they fill a batch of batch rows: a selective filter would otherwise
  // return many small batches, each with its own IPC message and per-buffer work on both sides.
  std::vector<std::shared_ptr<arrow::RecordBatch>> pending;
  int64_t pending_rows = 0;
  auto flush = [&]() -> arrow::Status {
    if (pending.empty()) return arrow::Status::OK();
    Phase p(meter, pr::kEncodeNs);
    std::shared_ptr<arrow::RecordBatch> out_batch = pending.front();
    if (pending.size() > 1) {
      ARROW_ASSIGN_OR_RAISE(out_batch, arrow::ConcatenateRecordBatches(pending));
    }
    pending.clear();
    pending_rows = 0;
    meter->Add(pr::kBatchesOut, 1);
    meter->Add(pr::kRowsOut, static_cast<uint64_t>(out_batch->num_rows()));
    return writer->WriteRecordBatch(*out_batch);
  };

  std::shared_ptr<arrow::RecordBatch> batch;
  int64_t passed = 0;   // a plain LIMIT's rows so far
  while (true) {
    if (auto st = next_kept(&batch); !st.ok()) return io_error(st);
    if (!batch) break;
    if (batch->num_rows() == 0) continue;
    if (aggregation) {
      Phase p(meter, pr::kAggregateNs);
      if (!aggregation->Consume(*batch, err)) return false;
      continue;
    }
    if (top) {
      Phase p(meter, pr::kSortNs);
      if (!top->Consume(std::move(batch), err)) return false;
      continue;
    }
    if (top_k) {   // a plain LIMIT: the first passing rows in file order
      batch = batch->Slice(0, std::min<int64_t>(batch->num_rows(), req.limit - passed));
      passed += batch->num_rows();
    }
    pending_rows += batch->num_rows();
    pending.push_back(std::move(batch));
    if (pending_rows >= req.batch_rows) {
      if (auto st = flush(); !st.ok()) return io_error(st);
    }
    if (too_big() || (top_k && passed == static_cast<int64_t>(req.limit))) break;   // a LIMIT reached: no more batches
  }
  if (aggregation) {   // every group in one batch, none when there is no group
    std::shared_ptr<arrow::RecordBatch> groups;
    {
      Phase p(meter, pr::kAggregateNs);
      if (!aggregation->Finish(&groups, err)) return false;
    }
    if (groups->num_rows() > 0) pending.push_back(std::move(groups));
  }
  if (top) {   // the selected rows, batch rows at a time
    std::shared_ptr<arrow::RecordBatch> rows;
    {
      Phase p(meter, pr::kSortNs);
      if (!top->Finish(&rows, err)) return false;
    }
    for (int64_t at = 0; rows && at < rows->num_rows() && !too_big(); at += req.batch_rows) {
      pending.push_back(rows->Slice(at, req.batch_rows));
      if (auto st = flush(); !st.ok()) return io_error(st);
    }
  }
  if (auto st = flush(); !st.ok()) return io_error(st);
  Phase p(meter, pr::kEncodeNs);
  if (auto st = writer->Close(); !st.ok()) return io_error(st);
  if (too_big()) {
    *err = Fail(E2BIG, "reply exceeds the client's limit of " + std::to_string(req.max_reply) +
                           " bytes; raise max_reply or scan fewer columns");
    return false;
  }
  meter->Add(pr::kReplyBytes, written());
  return true;
}

void Append(std::string* out, const void* p, size_t n) { out->append(static_cast<const char*>(p), n); }

}  // namespace

arrow::MemoryPool* Pool() {
  static arrow::MemoryPool* const pool = [] {
    arrow::MemoryPool* mimalloc = nullptr;
    return arrow::mimalloc_memory_pool(&mimalloc).ok() ? mimalloc : arrow::system_memory_pool();
  }();
  return pool;
}

Meter::Meter() : cpu_start_(CpuNow()), wall_start_(Clock(CLOCK_MONOTONIC)), last_(cpu_start_) {
  Running& r = Calls();
  std::lock_guard<std::mutex> lock(r.mu);
  all_mark_ = r.all.Advance(wall_start_);
  ++r.all.calls;
}

Meter::~Meter() { Leave(Clock(CLOCK_MONOTONIC)); }

void Meter::Join(uint64_t client) {
  if (client == 0 || client_ != 0 || !counted_) return;
  Running& r = Calls();
  std::lock_guard<std::mutex> lock(r.mu);
  Tally& t = r.by_client[client];
  own_mark_ = t.Advance(Clock(CLOCK_MONOTONIC));
  ++t.calls;
  client_ = client;
}

void Meter::Leave(uint64_t now) {
  if (!counted_) return;
  counted_ = false;
  Running& r = Calls();
  std::lock_guard<std::mutex> lock(r.mu);
  stats_[pr::kAllCallsNs] = r.all.Advance(now) - all_mark_;
  --r.all.calls;
  if (client_ == 0) return;
  auto t = r.by_client.find(client_);
  stats_[pr::kOwnCallsNs] = t->second.Advance(now) - own_mark_;
  if (--t->second.calls == 0) r.by_client.erase(t);
}

protocol::Stat Meter::Enter(protocol::Stat phase) {
  uint64_t now = CpuNow();
  if (current_ != pr::kStatCount) stats_[current_] += now - last_;
  last_ = now;
  protocol::Stat before = current_;
  current_ = phase;
  return before;
}

const Stats& Meter::Finish() {
  Enter(pr::kStatCount);
  stats_[pr::kTotalNs] = CpuNow() - cpu_start_;
  uint64_t now = Clock(CLOCK_MONOTONIC);
  stats_[pr::kWallNs] = now - wall_start_;
  Leave(now);
  return stats_;
}

bool ParseRequest(const uint8_t* data, size_t size, Request* req, Error* err) {
  arrow::util::InitializeUTF8();  // idempotent; ValidateUTF8 needs its tables
  Cursor c(data, size);
  std::string magic = c.bytes(4, "magic");
  if (c.ok() && std::memcmp(magic.data(), pr::kRequestMagic, 4) != 0) {
    *err = Fail(EPROTONOSUPPORT, "not a sae scan request (bad magic)");
    return false;
  }
  req->version = c.get<uint16_t>("version");
  if (c.ok() && req->version != pr::kVersion) {
    *err = Fail(EPROTONOSUPPORT, "request protocol version " + std::to_string(req->version) +
                                     " is not supported (this class speaks " + std::to_string(pr::kVersion) +
                                     "); rebuild the client against this class's scan_protocol.json");
    return false;
  }
  req->flags = c.get<uint16_t>("flags");
  if (c.ok() && (req->flags & ~pr::kKnownFlags)) c.fail("unknown flags");
  bool aggregate = req->flags & pr::kFlagAggregate, top_k = req->flags & pr::kFlagTopK;
  if (c.ok() && aggregate && top_k) c.fail("the aggregate and top-k flags exclude each other");
  uint8_t codec = c.get<uint8_t>("codec");
  if (c.ok()) {
    if (codec == pr::kCodecNone) req->codec = arrow::Compression::UNCOMPRESSED;
    else if (codec == pr::kCodecLz4) req->codec = arrow::Compression::LZ4_FRAME;
    else if (codec == pr::kCodecZstd) req->codec = arrow::Compression::ZSTD;
    else c.fail("unknown codec " + std::to_string(codec));
  }
  c.bytes(3, "reserved");
  uint32_t rows = c.get<uint32_t>("batch rows");
  if (c.ok()) {
    if (rows > pr::kMaxBatchRows) c.fail("batch rows above " + std::to_string(pr::kMaxBatchRows));
    req->batch_rows = rows ? rows : pr::kDefaultBatchRows;
  }
  req->max_reply = c.get<uint64_t>("max reply");
  req->client = c.get<uint64_t>("client");
  uint16_t ncols = c.get<uint16_t>("column count");
  for (uint16_t i = 0; c.ok() && i < ncols; ++i) req->columns.push_back(Column(c));
  uint32_t flen = c.get<uint32_t>("filter length");
  if (c.ok() && flen > c.left()) c.fail("filter length beyond the request");
  if (c.ok() && flen > 0) {
    size_t before = c.left();
    int nodes = 0;
    req->has_filter = Node(c, 0, &nodes, &req->filter);
    if (c.ok() && before - c.left() != flen) c.fail("filter length does not match its encoding");
  }
  if (c.ok() && aggregate) Aggregates(c, req);
  if (c.ok() && top_k) SortKeys(c, req);
  if (c.ok() && (req->flags & pr::kFlagCsv)) CsvSchema(c, req);
  if (c.ok() && c.left() != 0) c.fail(std::to_string(c.left()) + " trailing bytes");
  if (!c.ok()) {
    *err = Fail(EINVAL, "malformed request: " + c.what());
    return false;
  }
  if (aggregate && (ncols || (req->flags & pr::kFlagWholeObject))) {
    *err = Fail(EINVAL, "an aggregate request names no columns and does not take whole objects");
    return false;
  }
  if (top_k && (req->flags & pr::kFlagWholeObject)) {
    *err = Fail(EINVAL, "a top-k request does not take whole objects");
    return false;
  }
  return true;
}

bool Scan(const std::shared_ptr<arrow::io::RandomAccessFile>& file, const Request& req, Meter* meter,
          const std::shared_ptr<arrow::io::OutputStream>& out, uint16_t* body, Error* err, IndexStore* index) {
  meter->Join(req.client);
  try {
    return ScanImpl(std::make_shared<MeteredFile>(file, meter), req, meter, out, body, err, index);
  } catch (const std::exception& e) {
    *err = Fail(EIO, std::string("scan failed: ") + e.what());
    return false;
  }
}

bool Schema(const std::shared_ptr<arrow::io::RandomAccessFile>& file, std::shared_ptr<arrow::Buffer>* reply,
            Error* err) {
  try {
    Stored stored;
    if (!OpenStored(file, pr::kDefaultBatchRows, nullptr, &stored, err)) return false;
    const std::shared_ptr<arrow::Schema>& schema = stored.schema;
    auto out = arrow::io::BufferOutputStream::Create(1 << 12, Pool());
    std::shared_ptr<arrow::ipc::RecordBatchWriter> writer;
    if (!out.ok() || !OpenWriter(schema, arrow::Compression::UNCOMPRESSED, nullptr, *out, &writer, err)) {
      if (!out.ok()) *err = Fail(EIO, out.status().message());
      return false;
    }
    arrow::Status st = writer->Close();
    auto done = st.ok() ? (*out)->Finish() : arrow::Result<std::shared_ptr<arrow::Buffer>>(st);
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

std::string EncodeReplyHeader(const Stats& stats, uint16_t body) {
  std::string out(pr::kReplyMagic, 4);
  uint16_t count = pr::kStatCount;
  Append(&out, &count, 2);  // little-endian hosts only (x86-64, aarch64)
  Append(&out, &body, 2);
  Append(&out, stats.data(), sizeof(uint64_t) * stats.size());
  return out;
}

std::string EncodeError(const Error& err) {
  std::string out(pr::kErrorMagic, 4);
  uint32_t code = static_cast<uint32_t>(err.code), len = static_cast<uint32_t>(err.message.size());
  Append(&out, &code, 4);
  Append(&out, &len, 4);
  out += err.message;
  return out;
}

}  // namespace sae::scan
