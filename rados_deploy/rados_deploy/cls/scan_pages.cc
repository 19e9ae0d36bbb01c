// Reading only the pages that hold given rows (see scan_pages.h).
#include "scan_pages.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <arrow/buffer.h>
#include <arrow/io/memory.h>
#include <parquet/column_reader.h>
#include <parquet/exception.h>
#include <parquet/file_reader.h>
#include <parquet/metadata.h>
#include <parquet/page_index.h>
#include <parquet/properties.h>

#include "scan_core.h"

namespace sae::scan {
namespace {

using Ranges = std::vector<std::pair<int64_t, int64_t>>;   // [first, end) rows, ascending, apart

// Byte ranges [offset, end) of column chunk `leaf` that hold its dictionary page and the data
// pages of `ranges`, adjacent ones joined.
Ranges PageBytes(const parquet::ColumnChunkMetaData& chunk, const std::vector<parquet::PageLocation>& pages,
                 int64_t num_rows, const Ranges& ranges) {
  Ranges bytes;
  auto add = [&](int64_t offset, int64_t end) {
    if (!bytes.empty() && bytes.back().second == offset) bytes.back().second = end;
    else bytes.emplace_back(offset, end);
  };
  if (chunk.has_dictionary_page() && 0 < chunk.dictionary_page_offset() && chunk.dictionary_page_offset() < pages.front().offset)
    add(chunk.dictionary_page_offset(), pages.front().offset);
  auto range = ranges.begin();
  for (size_t p = 0; p < pages.size() && range != ranges.end(); ++p) {
    int64_t first = pages[p].first_row_index, end = p + 1 < pages.size() ? pages[p + 1].first_row_index : num_rows;
    while (range != ranges.end() && range->second <= first) ++range;
    if (range != ranges.end() && range->first < end) add(pages[p].offset, pages[p].offset + pages[p].compressed_page_size);
  }
  return bytes;
}

// The row group of a PagedContents: each column chunk's page reader reads only its PageBytes.
class PagedRowGroup : public parquet::RowGroupReader::Contents {
 public:
  PagedRowGroup(std::shared_ptr<arrow::io::RandomAccessFile> file, std::unique_ptr<parquet::RowGroupMetaData> meta,
                const parquet::ReaderProperties& props, const std::map<int, Ranges>* bytes)
      : file_(std::move(file)), meta_(std::move(meta)), props_(props), bytes_(bytes) {}

  std::unique_ptr<parquet::PageReader> GetColumnPageReader(int i) override {
    auto chunk = meta_->ColumnChunk(i);
    auto found = bytes_->find(i);
    if (found == bytes_->end()) throw parquet::ParquetException("paged read: column ", i, " was not planned");
    std::vector<std::shared_ptr<arrow::Buffer>> pieces;
    for (const auto& [offset, end] : found->second) {
      PARQUET_ASSIGN_OR_THROW(auto piece, file_->ReadAt(offset, end - offset));
      pieces.push_back(std::move(piece));
    }
    PARQUET_ASSIGN_OR_THROW(auto joined, arrow::ConcatenateBuffers(pieces, Pool()));
    return parquet::PageReader::Open(std::make_shared<arrow::io::BufferReader>(std::move(joined)),
                                     chunk->num_values(), chunk->compression(), props_,
                                     *meta_->schema()->Column(i));
  }
  const parquet::RowGroupMetaData* metadata() const override { return meta_.get(); }
  const parquet::ReaderProperties* properties() const override { return &props_; }

 private:
  std::shared_ptr<arrow::io::RandomAccessFile> file_;
  std::unique_ptr<parquet::RowGroupMetaData> meta_;
  parquet::ReaderProperties props_;
  const std::map<int, Ranges>* bytes_;
};

// A Parquet file of one row group whose planned columns read only their PageBytes; its metadata
// is the whole file's (the rows a column yields end where its pages do).
class PagedContents : public parquet::ParquetFileReader::Contents {
 public:
  PagedContents(std::shared_ptr<arrow::io::RandomAccessFile> file, parquet::ParquetFileReader* whole,
                std::map<int, Ranges> bytes)
      : file_(std::move(file)), whole_(whole), meta_(whole->metadata()), props_(Pool()), bytes_(std::move(bytes)) {}

  void Close() override {}
  std::shared_ptr<parquet::RowGroupReader> GetRowGroup(int i) override {
    return std::make_shared<parquet::RowGroupReader>(
        std::make_unique<PagedRowGroup>(file_, meta_->RowGroup(i), props_, &bytes_));
  }
  std::shared_ptr<parquet::FileMetaData> metadata() const override { return meta_; }
  std::shared_ptr<parquet::PageIndexReader> GetPageIndexReader() override { return nullptr; }
  parquet::BloomFilterReader& GetBloomFilterReader() override { return whole_->GetBloomFilterReader(); }

 private:
  std::shared_ptr<arrow::io::RandomAccessFile> file_;
  parquet::ParquetFileReader* whole_;
  std::shared_ptr<parquet::FileMetaData> meta_;
  parquet::ReaderProperties props_;
  std::map<int, Ranges> bytes_;
};

}  // namespace

arrow::Result<std::unique_ptr<parquet::arrow::FileReader>> PagedReader(
    const std::shared_ptr<arrow::io::RandomAccessFile>& file, parquet::arrow::FileReader* whole,
    const std::vector<int>& leaves, const std::vector<uint32_t>& rows, uint64_t* covered) {
  parquet::ParquetFileReader* parquet = whole->parquet_reader();
  auto meta = parquet->metadata();
  if (meta->num_row_groups() != 1 || leaves.empty() || rows.empty()) return nullptr;
  const int64_t num_rows = meta->RowGroup(0)->num_rows();
  std::shared_ptr<parquet::RowGroupPageIndexReader> index;
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  auto page_index = parquet->GetPageIndexReader();
  if (!page_index) return nullptr;
  page_index->WillNeed({0}, std::vector<int32_t>(leaves.begin(), leaves.end()), {false, true});
  index = page_index->RowGroup(0);
  END_PARQUET_CATCH_EXCEPTIONS
  if (!index) return nullptr;
  // Each read column's pages, and the rows where every one of them starts a page.
  std::map<int, std::vector<parquet::PageLocation>> pages;
  std::set<int64_t> shared;
  BEGIN_PARQUET_CATCH_EXCEPTIONS
  for (int leaf : leaves) {
    auto offsets = index->GetOffsetIndex(leaf);
    if (!offsets || offsets->page_locations().empty()) return nullptr;
    const auto& locations = pages[leaf] = offsets->page_locations();
    std::set<int64_t> starts;
    for (const auto& p : locations) starts.insert(p.first_row_index);
    if (leaf == leaves.front()) {
      shared = std::move(starts);
    } else {
      std::set<int64_t> both;
      std::set_intersection(shared.begin(), shared.end(), starts.begin(), starts.end(), std::inserter(both, both.end()));
      shared = std::move(both);
    }
  }
  END_PARQUET_CATCH_EXCEPTIONS
  if (!shared.count(0)) return nullptr;
  shared.insert(num_rows);
  // Per row: from the last shared start at or before it to the next one, ranges joined.
  Ranges ranges;
  for (uint32_t row : rows) {
    if (row >= num_rows) continue;
    auto next = shared.upper_bound(row);
    int64_t first = *std::prev(next), end = *next;   // shared holds 0, so a start precedes every row
    if (!ranges.empty() && ranges.back().second >= first) ranges.back().second = std::max(ranges.back().second, end);
    else ranges.emplace_back(first, end);
  }
  *covered = 0;
  for (const auto& [first, end] : ranges) *covered += static_cast<uint64_t>(end - first);
  if (ranges.empty() || static_cast<int64_t>(*covered) >= num_rows) return nullptr;
  std::map<int, Ranges> bytes;
  auto row_group = meta->RowGroup(0);
  for (const auto& [leaf, locations] : pages) bytes[leaf] = PageBytes(*row_group->ColumnChunk(leaf), locations, num_rows, ranges);
  auto paged = std::make_unique<parquet::ParquetFileReader>();
  paged->Open(std::make_unique<PagedContents>(file, parquet, std::move(bytes)));
  return parquet::arrow::FileReader::Make(Pool(), std::move(paged), whole->properties());
}

}  // namespace sae::scan
