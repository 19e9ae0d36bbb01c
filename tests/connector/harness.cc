// Runs the scan core (rados_deploy/rados_deploy/cls/scan_core.cc) outside Ceph on the shared test
// vectors. Reads commands from stdin, one per line, answers one line each:
//   parse <hex>                 -> ok <flags> <codec> <batch_rows> <max_reply> <client> [<cols,comma>]
//                                  <aggregates> <top-k> <expr> | err <errno> <message>;
//                                  <aggregates>: "-" or "<group cols,comma>|<fn>[:<col>],..." (fn:
//                                  its code); <top-k>: "-" or "<limit>|<col>:<key flags>,..." 
//   scan <parquet> <hex> <out>  -> ok <bytes> (reply as the class sends it, stats header and IPC
//                                  stream, written to <out>) | err <errno> <message>
//   schema <parquet> <out>      -> ok <bytes> (schema-only IPC stream written to <out>) | err ...
//   index <parquet> <hex>       -> ok <JSON of the build> | err <errno> <message>: the index request
//                                  <hex> builds the file's index in a map the process keeps, which
//                                  later scans of that file probe (as the OSD's omap)
//   header <parquet>            -> ok <the index header's text, as the omap holds it> | err 2 ...
//   carry <parquet> <other>     -> ok: <parquet>'s index becomes <other>'s (as an omap outlives a
//                                  rewrite of its object's data)
//   fuzz <parquet> <hex> <n> <seed> -> ok <parsed> <scanned> <errors> (mutated requests, no crash)
//   constants                   -> the protocol constants this build uses, one "<name> <value>" line
//                                  each, then "end"
#include <algorithm>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include <arrow/compute/initialize.h>
#include <arrow/io/file.h>
#include <arrow/io/memory.h>

#include "scan_core.h"
#include "scan_index.h"

namespace {

// An index kept in memory, as an OSD keeps one in the object's omap.
class MapStore : public sae::scan::IndexStore {
 public:
  arrow::Result<std::optional<std::string>> Get(const std::string& key) override {
    auto it = map.find(key);
    return it == map.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  arrow::Status Put(const std::string& key, const std::string& value) override {
    map[key] = value;
    return arrow::Status::OK();
  }
  std::map<std::string, std::string> map;
};

std::string Unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

bool Parse(const std::string& raw, sae::scan::Request* req, sae::scan::Error* err) {
  return sae::scan::ParseRequest(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), req, err);
}

// `text` with each line break and the indent after it as one space (an IN list's value set prints
// an array over several lines), as tests/vectors/scan/make_vectors.py records expressions.
std::string OneLine(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') {
      out.push_back(text[i]);
      continue;
    }
    out.push_back(' ');
    while (i + 1 < text.size() && text[i + 1] == ' ') ++i;
  }
  return out;
}

std::shared_ptr<arrow::io::RandomAccessFile> Open(const std::string& path) {
  return *arrow::io::ReadableFile::Open(path);
}

}  // namespace

int main() {
  if (!arrow::compute::Initialize().ok()) return 2;
  std::map<std::string, MapStore> indexes;   // by file
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd, a, b, c, d;
    in >> cmd >> a >> b >> c >> d;
    sae::scan::Request req;
    sae::scan::Error err{0, ""};
    if (cmd == "parse") {
      std::string raw = Unhex(a);
      if (!Parse(raw, &req, &err)) {
        std::cout << "err " << err.code << " " << err.message << std::endl;
        continue;
      }
      std::string cols;
      for (const auto& col : req.columns) cols += (cols.empty() ? "" : ",") + col;
      const char* codec = req.codec == arrow::Compression::LZ4_FRAME ? "lz4"
                          : req.codec == arrow::Compression::ZSTD    ? "zstd"
                                                                     : "none";
      std::string aggs = req.aggregates.empty() ? "-" : "";
      for (size_t i = 0; i < req.group_by.size(); ++i) aggs += (i ? "," : "") + req.group_by[i];
      for (size_t i = 0; i < req.aggregates.size(); ++i) {
        const auto& agg = req.aggregates[i];
        aggs += (i ? "," : "|") + std::to_string(agg.fn) + (agg.column.empty() ? "" : ":" + agg.column);
      }
      std::string top = req.flags & sae::protocol::kFlagTopK ? std::to_string(req.limit) + "|" : "-";
      for (size_t i = 0; i < req.order_by.size(); ++i) {
        const auto& key = req.order_by[i];
        top += (i ? "," : "") + key.column + ":" +
               std::to_string(key.descending * sae::protocol::kKeyDescending + key.nulls_first * sae::protocol::kKeyNullsFirst);
      }
      std::string csv = req.csv ? "" : "-";   // name:type (spaces dropped) per column
      for (int i = 0; req.csv && i < req.csv->num_fields(); ++i) {
        std::string type = req.csv->field(i)->type()->ToString();
        type.erase(std::remove(type.begin(), type.end(), ' '), type.end());
        csv += (i ? "," : "") + req.csv->field(i)->name() + ":" + type;
      }
      std::cout << "ok " << req.flags << " " << codec << " " << req.batch_rows << " "
                << req.max_reply << " " << req.client << " [" << cols << "] " << aggs << " " << top << " " << csv << " "
                << (req.has_filter ? OneLine(req.filter.ToString()) : "-") << std::endl;
    } else if (cmd == "scan") {
      std::string raw = Unhex(b);
      auto stream = *arrow::io::BufferOutputStream::Create();
      sae::scan::Meter meter;
      uint16_t body = 0;
      if (!Parse(raw, &req, &err) || !sae::scan::Scan(Open(a), req, &meter, stream, &body, &err, &indexes[a])) {
        std::cout << "err " << err.code << " " << err.message << std::endl;
        continue;
      }
      std::string header = sae::scan::EncodeReplyHeader(meter.Finish(), body);
      auto reply = *stream->Finish();
      auto out = *arrow::io::FileOutputStream::Open(c);
      if (!out->Write(header.data(), header.size()).ok() || !out->Write(reply).ok() || !out->Close().ok()) return 3;
      std::cout << "ok " << header.size() + reply->size() << std::endl;
    } else if (cmd == "index") {
      std::string raw = Unhex(b), column;
      sae::scan::Meter meter;
      sae::scan::IndexBuild build;
      if (!sae::scan::ParseIndexRequest(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), &column, &err) ||
          !sae::scan::BuildIndex(Open(a), column, &indexes[a], &meter, &build, &err)) {
        std::cout << "err " << err.code << " " << err.message << std::endl;
        continue;
      }
      std::cout << "ok " << sae::scan::EncodeIndexBuild(build, meter.Finish()[sae::protocol::kWallNs]) << std::endl;
    } else if (cmd == "header") {
      auto h = indexes[a].Get(sae::protocol::kIndexHeaderKey);
      std::cout << (h.ok() && *h ? "ok " + **h : std::string("err 2 no index header")) << std::endl;
    } else if (cmd == "carry") {
      indexes[b] = indexes[a];
      std::cout << "ok" << std::endl;
    } else if (cmd == "schema") {
      std::shared_ptr<arrow::Buffer> reply;
      if (!sae::scan::Schema(Open(a), &reply, &err)) {
        std::cout << "err " << err.code << " " << err.message << std::endl;
        continue;
      }
      auto out = *arrow::io::FileOutputStream::Open(b);
      if (!out->Write(reply).ok() || !out->Close().ok()) return 3;
      std::cout << "ok " << reply->size() << std::endl;
    } else if (cmd == "fuzz") {
      std::string base = Unhex(b);
      std::mt19937 rng(std::stoul(d));
      int parsed = 0, scanned = 0, errors = 0, n = std::stoi(c);
      for (int i = 0; i < n; ++i) {
        std::string m = base;
        int edits = 1 + rng() % 4;
        for (int e = 0; e < edits && !m.empty(); ++e) {
          switch (rng() % 3) {
            case 0: m[rng() % m.size()] = static_cast<char>(rng()); break;
            case 1: m.resize(rng() % (m.size() + 1)); break;
            default: m.insert(rng() % (m.size() + 1), 1, static_cast<char>(rng()));
          }
        }
        sae::scan::Request r;
        sae::scan::Meter meter;
        if (!Parse(m, &r, &err)) { ++errors; continue; }
        ++parsed;
        r.max_reply = 1 << 20;
        auto stream = *arrow::io::BufferOutputStream::Create();
        uint16_t body = 0;
        if (sae::scan::Scan(Open(a), r, &meter, stream, &body, &err)) ++scanned; else ++errors;
      }
      std::cout << "ok " << parsed << " " << scanned << " " << errors << std::endl;
    } else if (cmd == "constants") {
      namespace pr = sae::protocol;
      std::cout << "version " << pr::kVersion << "\n"
                << "request_magic " << std::string(pr::kRequestMagic, 4) << "\n"
                << "reply_magic " << std::string(pr::kReplyMagic, 4) << "\n"
                << "error_magic " << std::string(pr::kErrorMagic, 4) << "\n"
                << "errors_in_band " << pr::kFlagErrorsInBand << "\n"
                << "aggregate " << pr::kFlagAggregate << "\n"
                << "aggregate_functions " << int(pr::kAggFunctionCount) << "\n"
                << "max_group_columns " << pr::kMaxGroupColumns << "\n"
                << "max_aggregates " << pr::kMaxAggregates << "\n"
                << "top_k " << pr::kFlagTopK << "\n"
                << "index " << pr::kFlagIndex << "\n"
                << "index_magic " << std::string(pr::kIndexMagic, 4) << "\n"
                << "index_header_key " << pr::kIndexHeaderKey << "\n"
                << "max_limit " << pr::kMaxLimit << "\n"
                << "max_sort_keys " << pr::kMaxSortKeys << "\n"
                << "default_batch_rows " << pr::kDefaultBatchRows << "\n"
                << "max_batch_rows " << pr::kMaxBatchRows << "\n"
                << "max_filter_depth " << pr::kMaxFilterDepth << "\n"
                << "max_filter_nodes " << pr::kMaxFilterNodes << "\n";
      for (int i = 0; i < pr::kStatCount; ++i) std::cout << "stat " << pr::kStatNames[i] << "\n";
      std::cout << "end" << std::endl;
    } else {
      std::cout << "err 22 unknown command" << std::endl;
    }
  }
  return 0;
}
