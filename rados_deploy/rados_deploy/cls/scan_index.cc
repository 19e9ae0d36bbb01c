// The OSD index (see scan_index.h and docs/protocol.md, "Index").
#include "scan_index.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <sstream>

#include <arrow/api.h>
#include <arrow/compute/api.h>
#include <parquet/arrow/schema.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>

namespace cp = arrow::compute;

namespace sae::scan {
namespace {

namespace pr = sae::protocol;

constexpr int kFormat = 2;               // of the header and buckets below; another is stale
constexpr uint64_t kRowsPerBucket = 64;   // a probe reads about this many rows' entries

// FNV-1a, 64 bits: the same hash in every build of the class (std::hash is not).
uint64_t Fnv(std::string_view bytes, uint64_t h = 14695981039346656037ULL) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
  return h;
}

std::string BucketKey(uint64_t bucket) {
  char b[96];
  std::snprintf(b, sizeof b, "%s.%08llx", pr::kIndexHeaderKey, static_cast<unsigned long long>(bucket));
  return b;
}

// The header (omap key pr::kIndexHeaderKey): format, object size, footer hash, buckets, rows, keys, bytes
// of the index, nanoseconds its build took, then the column (to the end); text, so a client reads it
// with any omap call.
struct Header {
  int format = 0;
  uint64_t size = 0, footer = 0, buckets = 0, rows = 0, keys = 0, bytes = 0, build_ns = 0;
  std::string column;

  std::string Encode() const {
    std::ostringstream o;
    o << format << " " << size << " " << footer << " " << buckets << " " << rows << " " << keys << " " << bytes << " "
      << build_ns << " " << column;
    return o.str();
  }
  static std::optional<Header> Decode(const std::string& text) {
    std::istringstream in(text);
    Header h;
    if (!(in >> h.format >> h.size >> h.footer >> h.buckets >> h.rows >> h.keys >> h.bytes >> h.build_ns) ||
        in.get() != ' ')
      return std::nullopt;
    std::getline(in, h.column, '\0');
    if (h.format != kFormat || h.buckets == 0 || h.column.empty()) return std::nullopt;
    return h;
  }
};

// What identifies the object's contents: its size and a hash of its Parquet footer (every column
// chunk's offsets, sizes and statistics).
std::pair<uint64_t, uint64_t> Fingerprint(parquet::arrow::FileReader* reader, int64_t size) {
  return {static_cast<uint64_t>(size), Fnv(reader->parquet_reader()->metadata()->SerializeToString())};
}

// Whether the index holds a column of `type`: exact values with one byte form each.
bool Indexable(const arrow::DataType& type) {
  return arrow::is_integer(type.id()) || type.id() == arrow::Type::BOOL || type.id() == arrow::Type::DATE32 ||
         type.id() == arrow::Type::DATE64 || type.id() == arrow::Type::TIMESTAMP ||
         arrow::is_base_binary_like(type.id());
}

// The key bytes of row `i` of `array` (not NULL).
std::string_view KeyAt(const arrow::Array& array, int64_t i, char* scratch) {
  const auto& type = *array.type();
  if (type.id() == arrow::Type::BOOL) {
    scratch[0] = static_cast<const arrow::BooleanArray&>(array).Value(i) ? 1 : 0;
    return {scratch, 1};
  }
  if (arrow::is_base_binary_like(type.id())) {
    if (type.id() == arrow::Type::LARGE_STRING || type.id() == arrow::Type::LARGE_BINARY)
      return static_cast<const arrow::LargeBinaryArray&>(array).GetView(i);
    return static_cast<const arrow::BinaryArray&>(array).GetView(i);
  }
  int width = type.byte_width();
  const uint8_t* values = array.data()->buffers[1]->data();
  return {reinterpret_cast<const char*>(values) + (array.offset() + i) * width, static_cast<size_t>(width)};
}

// The key bytes of a scalar of the column's type.
std::string KeyOf(const arrow::Scalar& s) {
  if (s.type->id() == arrow::Type::BOOL) return std::string(1, static_cast<const arrow::BooleanScalar&>(s).value ? 1 : 0);
  if (arrow::is_base_binary_like(s.type->id())) return static_cast<const arrow::BaseBinaryScalar&>(s).value->ToString();
  auto view = static_cast<const arrow::internal::PrimitiveScalarBase&>(s).view();
  return std::string(view);
}

void PutU32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }

uint32_t GetU32(const std::string& s, size_t at) {
  uint32_t v;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

// A bucket: per key, u32 length, the key's bytes, u32 row count, the rows as u32.
void AppendEntry(std::string* bucket, std::string_view key, const std::vector<uint32_t>& rows) {
  PutU32(bucket, static_cast<uint32_t>(key.size()));
  bucket->append(key);
  PutU32(bucket, static_cast<uint32_t>(rows.size()));
  for (uint32_t r : rows) PutU32(bucket, r);
}

// The rows of `key` in a bucket (appended to `rows`); false when the bucket is malformed.
bool FindEntry(const std::string& bucket, const std::string& key, std::vector<uint32_t>* rows) {
  size_t at = 0;
  while (at + 4 <= bucket.size()) {
    size_t n = GetU32(bucket, at);
    if (n > bucket.size() - at - 4 || bucket.size() - at - 4 - n < 4) return false;
    bool match = n == key.size() && bucket.compare(at + 4, n, key) == 0;
    uint32_t count = GetU32(bucket, at + 4 + n);
    size_t first = at + 4 + n + 4;
    if (first + 4 * static_cast<size_t>(count) > bucket.size()) return false;
    if (match) {
      for (uint32_t j = 0; j < count; ++j) rows->push_back(GetU32(bucket, first + 4 * j));
      return true;
    }
    at = first + 4 * static_cast<size_t>(count);
  }
  return at == bucket.size();
}

// Flatten `e` into its AND's conjuncts.
void Conjuncts(const cp::Expression& e, std::vector<cp::Expression>* out) {
  const cp::Expression::Call* call = e.call();
  if (call && call->function_name == "and_kleene") {
    for (const auto& a : call->arguments) Conjuncts(a, out);
  } else {
    out->push_back(e);
  }
}

// The literals `e` compares `column` with for equality: an `equal` of a column and a literal, an
// IN list (`if_else` of a NULL test and `is_in`s, as the scan core builds it), or an OR of those on
// one column; false for anything else.
bool KeyLiterals(const cp::Expression& e, std::string* column, std::vector<std::shared_ptr<arrow::Scalar>>* keys) {
  const cp::Expression::Call* call = e.call();
  if (!call) return false;
  if (call->function_name == "if_else" && call->arguments.size() == 3) {
    const cp::Expression::Call* test = call->arguments[0].call();
    return test && test->function_name == "is_null" && KeyLiterals(call->arguments[2], column, keys);
  }
  if (call->function_name == "or_kleene") {
    for (const auto& a : call->arguments)
      if (!KeyLiterals(a, column, keys)) return false;
    return true;
  }
  bool in = call->function_name == "is_in" && call->arguments.size() == 1;
  if (!in && (call->function_name != "equal" || call->arguments.size() != 2)) return false;
  const std::string* name = call->arguments[0].field_ref() ? call->arguments[0].field_ref()->name() : nullptr;
  if (!name || (!column->empty() && *column != *name)) return false;
  if (in) {
    const auto* set = static_cast<const cp::SetLookupOptions*>(call->options.get());
    if (!set || !set->value_set.is_array()) return false;
    auto values = set->value_set.make_array();
    for (int64_t i = 0; i < values->length(); ++i) {
      auto v = values->GetScalar(i);
      if (!v.ok()) return false;
      keys->push_back(*v);
    }
  } else {
    const arrow::Datum* lit = call->arguments[1].literal();
    if (!lit || !lit->is_scalar()) return false;
    keys->push_back(lit->scalar());
  }
  *column = *name;
  return true;
}

}  // namespace

bool ParseIndexRequest(const uint8_t* data, size_t size, std::string* column, Error* err) {
  const size_t head = 4 + 2 + 2;
  if (size < head || std::memcmp(data, pr::kIndexMagic, 4) != 0) {
    *err = {EPROTONOSUPPORT, "not an index request (magic)"};
    return false;
  }
  uint16_t version, len;
  std::memcpy(&version, data + 4, 2);
  std::memcpy(&len, data + 6, 2);
  if (version != pr::kVersion) {
    *err = {EPROTONOSUPPORT, "index request protocol version " + std::to_string(version) + " is not supported (this class speaks " +
                                 std::to_string(pr::kVersion) + ")"};
    return false;
  }
  if (len == 0 || size != head + len) {
    *err = {EINVAL, "index request: a column name of 1..65535 bytes, and nothing after it"};
    return false;
  }
  column->assign(reinterpret_cast<const char*>(data) + head, len);
  return true;
}

bool BuildIndex(const std::shared_ptr<arrow::io::RandomAccessFile>& file, const std::string& column,
                IndexStore* store, Meter* meter, IndexBuild* out, Error* err) {
  auto failed = [&](const arrow::Status& st) {
    *err = {EIO, "index build failed: " + st.ToString()};
    return false;
  };
  const auto start = std::chrono::steady_clock::now();
  std::unique_ptr<parquet::arrow::FileReader> reader;
  std::shared_ptr<arrow::Schema> schema;
  {
    Phase p(meter, pr::kDecodeNs);
    if (!OpenParquet(file, pr::kDefaultBatchRows, &reader, &schema, err)) return false;
  }
  int field = schema->GetFieldIndex(column);
  if (field < 0) {
    *err = {EINVAL, "index: unknown column '" + column + "'"};
    return false;
  }
  const auto& type = *schema->field(field)->type();
  if (!Indexable(type) || reader->manifest().schema_fields[field].column_index < 0) {
    *err = {EINVAL, "index: cannot index column '" + column + "' of type " + type.ToString() +
                        " (integers, booleans, dates, timestamps, strings and binaries only)"};
    return false;
  }
  auto size = file->GetSize();
  if (!size.ok()) return failed(size.status());
  auto [bytes, footer] = Fingerprint(reader.get(), *size);
  auto old = store->Get(pr::kIndexHeaderKey);
  if (!old.ok()) return failed(old.status());
  std::optional<Header> before = *old ? Header::Decode(**old) : std::nullopt;
  if (before && before->column == column && before->size == bytes && before->footer == footer) {
    *out = {false, before->rows, before->keys, before->buckets, before->bytes};
    return true;
  }
  std::shared_ptr<arrow::ChunkedArray> values;
  {
    Phase p(meter, pr::kDecodeNs);
    if (auto st = reader->ReadColumn(field, &values); !st.ok()) return failed(st);
  }
  Phase p(meter, pr::kIndexNs);
  std::map<std::string, std::vector<uint32_t>> rows;   // ordered: buckets come out the same every build
  uint32_t row = 0;
  char scratch[1];
  for (const auto& chunk : values->chunks()) {
    for (int64_t i = 0; i < chunk->length(); ++i, ++row) {
      if (chunk->IsValid(i)) rows[std::string(KeyAt(*chunk, i, scratch))].push_back(row);
    }
  }
  Header h{kFormat, bytes, footer, std::max<uint64_t>(1, (row + kRowsPerBucket - 1) / kRowsPerBucket), 0,
           rows.size(), 0, 0, column};
  std::vector<std::string> buckets(h.buckets);
  for (const auto& [key, at] : rows) {
    AppendEntry(&buckets[Fnv(key) % h.buckets], key, at);
    h.rows += at.size();
  }
  for (uint64_t b = 0; b < h.buckets; ++b) {
    if (auto st = store->Put(BucketKey(b), buckets[b]); !st.ok()) return failed(st);
    h.bytes += buckets[b].size() + BucketKey(b).size();
  }
  for (uint64_t b = h.buckets; before && b < before->buckets; ++b) {   // a smaller index leaves none of the old
    if (auto st = store->Put(BucketKey(b), ""); !st.ok()) return failed(st);
  }
  h.build_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
  if (auto st = store->Put(pr::kIndexHeaderKey, h.Encode()); !st.ok()) return failed(st);
  *out = {true, h.rows, h.keys, h.buckets, h.bytes};
  return true;
}

std::string EncodeIndexBuild(const IndexBuild& b, uint64_t build_ns) {
  std::ostringstream o;
  o << "{\"changed\":" << (b.changed ? "true" : "false") << ",\"rows\":" << b.rows << ",\"keys\":" << b.keys
    << ",\"buckets\":" << b.buckets << ",\"bytes\":" << b.bytes << ",\"build_ns\":" << build_ns << "}";
  return o.str();
}

arrow::Result<std::optional<std::vector<uint32_t>>> IndexedRows(parquet::arrow::FileReader* reader,
                                                                int64_t file_size, const arrow::Schema& schema,
                                                                const cp::Expression& filter,
                                                                IndexStore* store, Meter* meter) {
  Phase p(meter, pr::kIndexNs);
  std::vector<cp::Expression> conjuncts;
  Conjuncts(filter, &conjuncts);
  std::map<std::string, std::vector<std::shared_ptr<arrow::Scalar>>> equalities;   // by column
  for (const auto& c : conjuncts) {
    std::string column;
    std::vector<std::shared_ptr<arrow::Scalar>> keys;
    if (KeyLiterals(c, &column, &keys)) equalities.emplace(column, std::move(keys));
  }
  if (equalities.empty()) return std::nullopt;
  ARROW_ASSIGN_OR_RAISE(auto stored, store->Get(pr::kIndexHeaderKey));
  std::optional<Header> h = stored ? Header::Decode(*stored) : std::nullopt;
  int field = h ? schema.GetFieldIndex(h->column) : -1;
  auto found = h ? equalities.find(h->column) : equalities.end();
  if (field < 0 || found == equalities.end()) return std::nullopt;
  const auto& keys = found->second;
  auto [bytes, footer] = Fingerprint(reader, file_size);
  if (bytes != h->size || footer != h->footer) return std::nullopt;
  const auto& type = schema.field(field)->type();
  std::vector<uint32_t> rows;
  std::map<uint64_t, std::optional<std::string>> read;   // each bucket read once
  for (const auto& k : keys) {
    auto cast = cp::Cast(arrow::Datum(k), type, cp::CastOptions::Safe());
    if (!cast.ok() || !cast->scalar()->is_valid) continue;   // no value of the column equals it
    std::string key = KeyOf(*cast->scalar());
    uint64_t b = Fnv(key) % h->buckets;
    if (!read.count(b)) {
      ARROW_ASSIGN_OR_RAISE(read[b], store->Get(BucketKey(b)));
    }
    if (!read[b] || !FindEntry(*read[b], key, &rows)) return std::nullopt;   // a bucket missing or malformed
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  meter->Add(pr::kIndexRows, rows.size());
  return rows;
}

}  // namespace sae::scan
