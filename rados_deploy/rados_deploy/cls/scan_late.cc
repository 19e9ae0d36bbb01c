// Late materialization (see scan_late.h and docs/protocol.md).
#include "scan_late.h"

#include <algorithm>
#include <string>

#include <arrow/api.h>
#include <arrow/buffer_builder.h>
#include <arrow/compute/api.h>
#include <parquet/arrow/schema.h>
#include <parquet/column_reader.h>
#include <parquet/file_reader.h>
#include <parquet/schema.h>
#include <parquet/types.h>

namespace cp = arrow::compute;

namespace sae::scan {
namespace {

namespace pr = sae::protocol;

constexpr int64_t kChunkRows = 65536;   // rows decoded per column reader call: bounds the scratch
constexpr double kLateShare = 0.125;     // read late while at most this share of the first batch passes

// Whether gathering the column's Parquet values unchanged gives what the Arrow reader would read
// it as (`type`, from the file's Arrow schema): a flat column of a plain number, date, timestamp of
// the stored unit, string or binary.
bool Gatherable(const parquet::ColumnDescriptor& descr, const arrow::DataType& type) {
  if (descr.max_repetition_level() != 0 || descr.max_definition_level() > 1) return false;
  const auto& logical = *descr.logical_type();
  auto plain_int = [&](int bits) {
    if (logical.is_none()) return true;
    if (!logical.is_int()) return false;
    const auto& i = static_cast<const parquet::IntLogicalType&>(logical);
    return i.bit_width() == bits && i.is_signed();
  };
  switch (descr.physical_type()) {
    case parquet::Type::DOUBLE:
      return type.id() == arrow::Type::DOUBLE && logical.is_none();
    case parquet::Type::FLOAT:
      return type.id() == arrow::Type::FLOAT && logical.is_none();
    case parquet::Type::INT32:
      return (type.id() == arrow::Type::INT32 && plain_int(32)) || (type.id() == arrow::Type::DATE32 && logical.is_date());
    case parquet::Type::INT64: {
      if (type.id() == arrow::Type::INT64) return plain_int(64);
      if (type.id() != arrow::Type::TIMESTAMP || !logical.is_timestamp()) return false;
      auto stored = static_cast<const parquet::TimestampLogicalType&>(logical).time_unit();
      auto unit = static_cast<const arrow::TimestampType&>(type).unit();
      return (stored == parquet::LogicalType::TimeUnit::MILLIS && unit == arrow::TimeUnit::MILLI) ||
             (stored == parquet::LogicalType::TimeUnit::MICROS && unit == arrow::TimeUnit::MICRO) ||
             (stored == parquet::LogicalType::TimeUnit::NANOS && unit == arrow::TimeUnit::NANO);
    }
    case parquet::Type::BYTE_ARRAY:
      return (type.id() == arrow::Type::STRING && (logical.is_string() || logical.is_none())) ||
             (type.id() == arrow::Type::BINARY && logical.is_none());
    default:
      return false;
  }
}

}  // namespace

// One carried column read straight from its column chunk in one row group.
class LateColumn {
 public:
  virtual ~LateColumn() = default;
  // Decode the next `rows` rows and append those at `kept` (ascending row offsets among them).
  virtual arrow::Status Take(int64_t rows, const std::vector<int32_t>& kept) = 0;
  // Pass over the next `rows` rows (pages they cover whole are not decoded).
  virtual arrow::Status Skip(int64_t rows) = 0;
  // The appended values as an array (the builder starts over).
  virtual arrow::Result<std::shared_ptr<arrow::Array>> Finish() = 0;
};

namespace {

// Gathered values, fixed-width ones into a value and a validity buffer. Gather appends `get(p)`
// for each position p of `at`, a NULL for each -1.
template <typename T>
class FixedSink {
 public:
  explicit FixedSink(std::shared_ptr<arrow::DataType> type)
      : type_(std::move(type)), values_(Pool()), valid_(Pool()) {}
  template <typename Get>
  arrow::Status Gather(const std::vector<int32_t>& at, Get get) {
    ARROW_RETURN_NOT_OK(values_.Reserve(static_cast<int64_t>(at.size())));
    ARROW_RETURN_NOT_OK(valid_.Reserve(static_cast<int64_t>(at.size())));
    for (int32_t p : at) {
      bool valid = p >= 0;
      values_.UnsafeAppend(valid ? get(p) : T{});
      valid_.UnsafeAppend(valid);
      nulls_ += !valid;
    }
    return arrow::Status::OK();
  }
  arrow::Result<std::shared_ptr<arrow::Array>> Finish() {
    int64_t length = values_.length();
    std::shared_ptr<arrow::Buffer> values, valid;
    ARROW_RETURN_NOT_OK(values_.Finish(&values));
    ARROW_RETURN_NOT_OK(valid_.Finish(&valid));
    int64_t nulls = nulls_;
    nulls_ = 0;
    return arrow::MakeArray(arrow::ArrayData::Make(type_, length, {nulls ? valid : nullptr, values}, nulls));
  }

 private:
  std::shared_ptr<arrow::DataType> type_;
  arrow::TypedBufferBuilder<T> values_;
  arrow::TypedBufferBuilder<bool> valid_;
  int64_t nulls_ = 0;
};

// Byte arrays into a binary builder, typed as string or binary at the end.
class BytesSink {
 public:
  explicit BytesSink(std::shared_ptr<arrow::DataType> type) : type_(std::move(type)), builder_(Pool()) {}
  template <typename Get>
  arrow::Status Gather(const std::vector<int32_t>& at, Get get) {
    int64_t bytes = 0;
    for (int32_t p : at) bytes += p >= 0 ? get(p).len : 0;
    ARROW_RETURN_NOT_OK(builder_.Reserve(static_cast<int64_t>(at.size())));
    ARROW_RETURN_NOT_OK(builder_.ReserveData(bytes));
    for (int32_t p : at) {
      if (p < 0) {
        builder_.UnsafeAppendNull();
      } else {
        const parquet::ByteArray& v = get(p);
        builder_.UnsafeAppend(v.ptr, static_cast<int32_t>(v.len));
      }
    }
    return arrow::Status::OK();
  }
  arrow::Result<std::shared_ptr<arrow::Array>> Finish() {
    ARROW_ASSIGN_OR_RAISE(auto array, builder_.Finish());
    auto data = array->data()->Copy();
    data->type = type_;
    return arrow::MakeArray(data);
  }

 private:
  std::shared_ptr<arrow::DataType> type_;
  arrow::BinaryBuilder builder_;
};

template <typename DType, typename Sink>
class TypedLateColumn : public LateColumn {
  using T = typename DType::c_type;

 public:
  TypedLateColumn(std::shared_ptr<parquet::ColumnReader> reader, std::shared_ptr<arrow::DataType> type)
      : reader_(std::static_pointer_cast<parquet::TypedColumnReader<DType>>(std::move(reader))),
        sink_(std::move(type)),
        max_def_(reader_->descr()->max_definition_level()),
        dictionary_(reader_->GetExposedEncoding() == parquet::ExposedEncoding::DICTIONARY) {}

  arrow::Status Take(int64_t rows, const std::vector<int32_t>& kept) override {
    if (kept.empty()) return Skip(rows);
    size_t next = 0;
    for (int64_t done = 0; done < rows;) {
      int64_t want = std::min(rows - done, kChunkRows);
      defs_.resize(want);
      int64_t read = 0, levels;
      const T* dict = nullptr;
      int32_t dict_len = 0;
      if (dictionary_) {
        indices_.resize(want);
        levels = reader_->ReadBatchWithDictionary(want, max_def_ ? defs_.data() : nullptr, nullptr, indices_.data(),
                                                  &read, &dict, &dict_len);
      } else {
        values_.resize(want);
        levels = reader_->ReadBatch(want, max_def_ ? defs_.data() : nullptr, nullptr, values_.data(), &read);
      }
      if (levels <= 0) return arrow::Status::IOError("a column chunk ends before its row group does");
      // The kept rows in [done, done + levels): a row's value is the count of values before it.
      at_.clear();
      int64_t row = 0, value = 0;
      for (; next < kept.size() && kept[next] < done + levels; ++next) {
        int64_t here = kept[next] - done;
        if (max_def_) {
          for (; row < here; ++row) value += defs_[row] == max_def_;
          if (defs_[here] != max_def_) {
            at_.push_back(-1);
            continue;
          }
        } else {
          value = here;
        }
        if (value >= read) return arrow::Status::IOError("a page has fewer values than its levels promise");
        if (dictionary_) {   // positions in the dictionary
          int32_t index = indices_[value];
          if (index < 0 || index >= dict_len) return arrow::Status::IOError("a dictionary index out of range");
          at_.push_back(index);
        } else {
          at_.push_back(static_cast<int32_t>(value));
        }
      }
      const T* source = dictionary_ ? dict : values_.data();
      ARROW_RETURN_NOT_OK(sink_.Gather(at_, [source](int32_t p) -> const T& { return source[p]; }));
      done += levels;
    }
    return arrow::Status::OK();
  }

  arrow::Status Skip(int64_t rows) override {
    // Flat columns: one value (or null) per row, so values skipped are rows skipped.
    if (reader_->Skip(rows) != rows) return arrow::Status::IOError("a column chunk ends before its row group does");
    return arrow::Status::OK();
  }

  arrow::Result<std::shared_ptr<arrow::Array>> Finish() override { return sink_.Finish(); }

 private:
  std::shared_ptr<parquet::TypedColumnReader<DType>> reader_;
  Sink sink_;
  int16_t max_def_;
  bool dictionary_;
  std::vector<int16_t> defs_;
  std::vector<int32_t> indices_, at_;
  std::vector<T> values_;
};

std::unique_ptr<LateColumn> MakeLateColumn(parquet::RowGroupReader* row_group, int leaf,
                                           std::shared_ptr<arrow::DataType> type) {
  auto reader = row_group->ColumnWithExposeEncoding(leaf, parquet::ExposedEncoding::DICTIONARY);
  switch (reader->type()) {
    case parquet::Type::INT32:
      return std::make_unique<TypedLateColumn<parquet::Int32Type, FixedSink<int32_t>>>(reader, type);
    case parquet::Type::INT64:
      return std::make_unique<TypedLateColumn<parquet::Int64Type, FixedSink<int64_t>>>(reader, type);
    case parquet::Type::FLOAT:
      return std::make_unique<TypedLateColumn<parquet::FloatType, FixedSink<float>>>(reader, type);
    case parquet::Type::DOUBLE:
      return std::make_unique<TypedLateColumn<parquet::DoubleType, FixedSink<double>>>(reader, type);
    default:   // BYTE_ARRAY: Gatherable admits nothing else
      return std::make_unique<TypedLateColumn<parquet::ByteArrayType, BytesSink>>(reader, type);
  }
}

}  // namespace

LateScan::~LateScan() = default;

arrow::Result<std::unique_ptr<LateScan>> LateScan::Make(parquet::arrow::FileReader* reader,
                                                        const arrow::Schema& file_schema,
                                                        const std::vector<int>& carried,
                                                        const cp::Expression& filter, Meter* meter) {
  const auto& fields = reader->manifest().schema_fields;
  const auto* parquet_schema = reader->parquet_reader()->metadata()->schema();
  std::vector<bool> early(file_schema.num_fields(), false);
  for (const auto& ref : cp::FieldsInExpression(filter)) {
    int i = ref.name() ? file_schema.GetFieldIndex(*ref.name()) : -1;
    if (i < 0) return nullptr;   // a nested reference: read everything at once
    early[i] = true;
  }
  auto late_here = [&](int i) {
    const auto& f = fields[i];
    return !early[i] && f.column_index >= 0 && f.children.empty() &&
           Gatherable(*parquet_schema->Column(f.column_index), *file_schema.field(i)->type());
  };
  bool any_early = std::find(early.begin(), early.end(), true) != early.end();
  if (!any_early || reader->num_row_groups() == 0 || std::none_of(carried.begin(), carried.end(), late_here))
    return nullptr;

  std::unique_ptr<LateScan> scan(new LateScan());
  scan->reader_ = reader;
  scan->meter_ = meter;
  arrow::FieldVector carry_fields;
  for (size_t k = 0; k < carried.size(); ++k) {
    int i = carried[k];
    carry_fields.push_back(file_schema.field(i));
    if (late_here(i)) {
      scan->late_fields_.push_back(i);
      scan->late_types_.push_back(file_schema.field(i)->type());
      scan->late_slot_.push_back(static_cast<int>(k));
    } else {
      early[i] = true;
    }
  }
  scan->carry_schema_ = arrow::schema(carry_fields);
  // The early batch reader yields its fields in file order.
  arrow::FieldVector early_fields;
  std::vector<int> position(file_schema.num_fields(), -1);
  for (int i = 0; i < file_schema.num_fields(); ++i) {
    if (!early[i]) continue;
    position[i] = static_cast<int>(early_fields.size());
    early_fields.push_back(file_schema.field(i));
    Leaves(fields[i], &scan->early_leaves_);
  }
  for (int i : carried) scan->early_carried_.push_back(position[i]);
  ARROW_ASSIGN_OR_RAISE(scan->filter_, filter.Bind(*arrow::schema(early_fields)));

  // The first batch decides: where many of its rows pass, gathering them costs more than
  // decoding every row at once, so the caller reads everything. The late columns are opened only
  // once the late scan is chosen: opening one reads its column chunk.
  ARROW_RETURN_NOT_OK(scan->ReadEarly(&scan->first_));
  if (scan->first_) {
    ARROW_RETURN_NOT_OK(scan->Mask(*scan->first_, &scan->first_kept_));
    if (static_cast<double>(scan->first_kept_.size()) > kLateShare * static_cast<double>(scan->first_->num_rows()))
      return nullptr;
    Phase p(meter, pr::kDecodeNs);
    scan->OpenLate();
  }
  scan->late_chosen_ = true;
  return scan;
}

void LateScan::OpenLate() {
  auto row_group = reader_->parquet_reader()->RowGroup(row_group_);
  const auto& fields = reader_->manifest().schema_fields;
  late_.clear();
  for (size_t k = 0; k < late_fields_.size(); ++k)
    late_.push_back(MakeLateColumn(row_group.get(), fields[late_fields_[k]].column_index, late_types_[k]));
}

arrow::Status LateScan::ReadEarly(std::shared_ptr<arrow::RecordBatch>* batch) {
  Phase p(meter_, pr::kDecodeNs);
  while (true) {
    if (early_) {
      ARROW_RETURN_NOT_OK(early_->ReadNext(batch));
      if (*batch) return arrow::Status::OK();
    }
    if (++row_group_ >= reader_->num_row_groups()) return arrow::Status::OK();
    ARROW_ASSIGN_OR_RAISE(early_, reader_->GetRecordBatchReader({row_group_}, early_leaves_));
    if (late_chosen_) OpenLate();
  }
}

arrow::Status LateScan::Mask(const arrow::RecordBatch& batch, std::vector<int32_t>* kept) {
  Phase p(meter_, pr::kFilterNs);
  int64_t rows = batch.num_rows();
  ARROW_ASSIGN_OR_RAISE(auto mask, cp::ExecuteScalarExpression(filter_, cp::ExecBatch(batch)));
  if (mask.is_scalar()) {
    const auto& s = mask.scalar_as<arrow::BooleanScalar>();
    if (s.is_valid && s.value)
      for (int64_t r = 0; r < rows; ++r) kept->push_back(static_cast<int32_t>(r));
    return arrow::Status::OK();
  }
  auto bits = std::static_pointer_cast<arrow::BooleanArray>(mask.make_array());
  kept->reserve(bits->true_count());
  for (int64_t r = 0; r < rows; ++r)
    if (bits->IsValid(r) && bits->Value(r)) kept->push_back(static_cast<int32_t>(r));
  return arrow::Status::OK();
}

arrow::Status LateScan::Next(std::shared_ptr<arrow::RecordBatch>* kept) {
  std::shared_ptr<arrow::RecordBatch> batch = std::move(first_);
  std::vector<int32_t> rows_kept = std::move(first_kept_);
  if (!batch) {
    ARROW_RETURN_NOT_OK(ReadEarly(&batch));
    if (!batch) {
      *kept = nullptr;
      return arrow::Status::OK();
    }
    ARROW_RETURN_NOT_OK(Mask(*batch, &rows_kept));
  }
  int64_t rows = batch->num_rows();
  meter_->Add(pr::kBatchesIn, 1);
  meter_->Add(pr::kRowsIn, static_cast<uint64_t>(rows));
  {
    Phase p(meter_, pr::kDecodeNs);
    for (auto& column : late_) ARROW_RETURN_NOT_OK(column->Take(rows, rows_kept));
  }
  if (rows_kept.empty()) {
    *kept = batch->Slice(0, 0);
    return arrow::Status::OK();
  }
  std::vector<std::shared_ptr<arrow::Array>> columns(early_carried_.size());
  {
    Phase p(meter_, pr::kFilterNs);
    bool every_row = static_cast<int64_t>(rows_kept.size()) == rows;
    arrow::Int32Array indices(static_cast<int64_t>(rows_kept.size()),
                              arrow::Buffer::Wrap(rows_kept.data(), rows_kept.size()));
    cp::ExecContext ctx(Pool());
    for (size_t k = 0; k < early_carried_.size(); ++k) {
      if (early_carried_[k] < 0) continue;
      auto column = batch->column(early_carried_[k]);
      if (every_row) {
        columns[k] = column;
        continue;
      }
      ARROW_ASSIGN_OR_RAISE(auto taken, cp::Take(column, indices, cp::TakeOptions::NoBoundsCheck(), &ctx));
      columns[k] = taken.make_array();
    }
  }
  {
    Phase p(meter_, pr::kDecodeNs);
    for (size_t j = 0; j < late_.size(); ++j) {
      ARROW_ASSIGN_OR_RAISE(columns[late_slot_[j]], late_[j]->Finish());
    }
  }
  *kept = arrow::RecordBatch::Make(carry_schema_, static_cast<int64_t>(rows_kept.size()), std::move(columns));
  return arrow::Status::OK();
}

}  // namespace sae::scan
