// The `scan`, `schema` and `index` methods of the sae object class. `scan` reads its object
// (Parquet or an Arrow IPC file) through cls_cxx_read (only the byte ranges the projection,
// filter, aggregates and sort keys need), filters and projects (or aggregates, or selects the top
// rows) in batches with Arrow compute and replies with the call's stats and an Arrow IPC stream;
// `index` keeps an index of a key column in the object's omap, which a scan with the index flag
// probes. Requests and replies: docs/protocol.md.
#include <cerrno>
#include <climits>

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <arrow/memory_pool.h>

#include "sae_cls.h"
#include "scan_core.h"
#include "scan_index.h"

namespace {

// An Arrow buffer over a bufferlist's memory, owning the bufferlist.
class BufferlistBuffer : public arrow::Buffer {
 public:
  explicit BufferlistBuffer(ceph::bufferlist bl) : arrow::Buffer(nullptr, 0), bl_(std::move(bl)) {
    if (bl_.length() > 0) {
      data_ = reinterpret_cast<const uint8_t*>(bl_.c_str());   // rebuilds into one piece if needed
      size_ = capacity_ = bl_.length();
    }
  }

 private:
  ceph::bufferlist bl_;
};

// The reply's IPC stream, written straight into the OSD's reply bufferlist (no growing buffer to
// copy out of afterwards).
class BufferlistStream : public arrow::io::OutputStream {
 public:
  explicit BufferlistStream(ceph::bufferlist* bl) : bl_(bl) {}

  arrow::Status Close() override {
    closed_ = true;
    return arrow::Status::OK();
  }
  bool closed() const override { return closed_; }
  arrow::Result<int64_t> Tell() const override { return static_cast<int64_t>(bl_->length()); }
  arrow::Status Write(const void* data, int64_t nbytes) override {
    if (nbytes > static_cast<int64_t>(UINT_MAX - bl_->length())) return arrow::Status::IOError("reply over 4 GiB");
    bl_->append(static_cast<const char*>(data), static_cast<unsigned>(nbytes));
    return arrow::Status::OK();
  }

 private:
  ceph::bufferlist* bl_;
  bool closed_ = false;
};

// The object as a random-access file; every read is a cls_cxx_read in the calling op thread.
class ObjectFile : public arrow::io::RandomAccessFile {
 public:
  ObjectFile(cls_method_context_t hctx, int64_t size) : hctx_(hctx), size_(size) {}

  arrow::Status Close() override {
    closed_ = true;
    return arrow::Status::OK();
  }
  bool closed() const override { return closed_; }
  arrow::Result<int64_t> Tell() const override { return pos_; }
  arrow::Result<int64_t> GetSize() override { return size_; }
  arrow::Status Seek(int64_t position) override {
    if (position < 0 || position > size_) return arrow::Status::IOError("seek out of range");
    pos_ = position;
    return arrow::Status::OK();
  }
  arrow::Result<int64_t> Read(int64_t nbytes, void* out) override {
    ARROW_ASSIGN_OR_RAISE(int64_t n, ReadAt(pos_, nbytes, out));
    pos_ += n;
    return n;
  }
  arrow::Result<std::shared_ptr<arrow::Buffer>> Read(int64_t nbytes) override {
    ARROW_ASSIGN_OR_RAISE(auto buf, ReadAt(pos_, nbytes));
    pos_ += buf->size();
    return buf;
  }
  arrow::Result<int64_t> ReadAt(int64_t position, int64_t nbytes, void* out) override {
    if (position < 0 || nbytes < 0) return arrow::Status::IOError("negative read range");
    nbytes = std::min<int64_t>(nbytes, std::max<int64_t>(0, size_ - position));
    if (nbytes == 0) return 0;
    ceph::bufferlist bl;
    int r = cls_cxx_read(hctx_, static_cast<int>(position), static_cast<int>(nbytes), &bl);
    if (r < 0) return arrow::Status::IOError("cls_cxx_read failed: errno ", -r);
    int64_t n = std::min<int64_t>(nbytes, bl.length());
    bl.begin().copy(static_cast<unsigned>(n), static_cast<char*>(out));
    return n;
  }
  // The store's own buffers, without a copy (unless the read came back in pieces).
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes) override {
    if (position < 0 || nbytes < 0) return arrow::Status::IOError("negative read range");
    nbytes = std::min<int64_t>(nbytes, std::max<int64_t>(0, size_ - position));
    ceph::bufferlist bl;
    if (nbytes > 0) {
      int r = cls_cxx_read(hctx_, static_cast<int>(position), static_cast<int>(nbytes), &bl);
      if (r < 0) return arrow::Status::IOError("cls_cxx_read failed: errno ", -r);
    }
    return std::make_shared<BufferlistBuffer>(std::move(bl));
  }

 private:
  cls_method_context_t hctx_;
  int64_t size_;
  int64_t pos_ = 0;
  bool closed_ = false;
};

// The object's index in its omap (scan_index.h).
class OmapStore : public sae::scan::IndexStore {
 public:
  explicit OmapStore(cls_method_context_t hctx) : hctx_(hctx) {}
  arrow::Result<std::optional<std::string>> Get(const std::string& key) override {
    ceph::bufferlist bl;
    int r = cls_cxx_map_get_val(hctx_, key, &bl);
    if (r == -ENOENT || r == -ENODATA || r == -EOPNOTSUPP) return std::nullopt;   // none; a pool without omaps
    if (r < 0) return arrow::Status::IOError("cls_cxx_map_get_val failed: errno ", -r);
    return bl.to_str();
  }
  arrow::Status Put(const std::string& key, const std::string& value) override {
    ceph::bufferlist bl;
    bl.append(value);
    int r = cls_cxx_map_set_val(hctx_, key, &bl);
    if (r < 0) return arrow::Status::IOError("cls_cxx_map_set_val failed: errno ", -r);
    return arrow::Status::OK();
  }

 private:
  cls_method_context_t hctx_;
};

cls_method_handle_t h_scan;
cls_method_handle_t h_schema;
cls_method_handle_t h_index;

// The object as a file, or false with `err` set.
bool Object(cls_method_context_t hctx, std::shared_ptr<ObjectFile>* file, sae::scan::Error* err) {
  uint64_t size = 0;
  time_t mtime;
  int r = cls_cxx_stat(hctx, &size, &mtime);
  if (r < 0) {
    *err = {-r, "cannot stat the object"};
    return false;
  }
  *file = std::make_shared<ObjectFile>(hctx, static_cast<int64_t>(size));
  return true;
}

// Errors: the error frame (error magic, errno, message) and -errno, or 0 with the errors-in-band
// flag, for clients whose binding drops the out buffer of a failed call (python-rados).
int ReplyError(const sae::scan::Error& err, bool in_band, const char* method, ceph::bufferlist* out) {
  CLS_LOG(1, "sae %s: error %d: %s", method, err.code, err.message.c_str());
  out->append(sae::scan::EncodeError(err));
  return in_band ? 0 : -err.code;
}

// Success: the reply header (the call's stats, the body's format) and the body, 0.
int scan(cls_method_context_t hctx, ceph::bufferlist* in, ceph::bufferlist* out) {
  sae::scan::Meter meter;
  sae::scan::Request req;
  sae::scan::Error err{0, ""};
  std::string raw = in->to_str();
  bool ok = sae::scan::ParseRequest(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), &req, &err);
  ceph::bufferlist body;
  uint16_t format = sae::protocol::kBodyArrowIpc;
  std::shared_ptr<ObjectFile> file;
  OmapStore omap(hctx);
  ok = ok && Object(hctx, &file, &err) &&
       sae::scan::Scan(file, req, &meter, std::make_shared<BufferlistStream>(&body), &format, &err, &omap);
  if (!ok) return ReplyError(err, req.flags & sae::protocol::kFlagErrorsInBand, "scan", out);
  ceph::bufferlist stream;
  {
    sae::scan::Phase p(&meter, sae::protocol::kReplyNs);
    stream.claim_append(body);   // no copy: the IPC writer wrote into the OSD's buffers
  }
  out->append(sae::scan::EncodeReplyHeader(meter.Finish(), format));
  out->claim_append(stream);
  return 0;
}

// The object's Arrow schema (input ignored) as a plain IPC stream; errors always in band.
int schema(cls_method_context_t hctx, ceph::bufferlist*, ceph::bufferlist* out) {
  sae::scan::Error err{0, ""};
  std::shared_ptr<arrow::Buffer> reply;
  std::shared_ptr<ObjectFile> file;
  if (!Object(hctx, &file, &err) || !sae::scan::Schema(file, &reply, &err)) {
    return ReplyError(err, true, "schema", out);
  }
  out->append(reinterpret_cast<const char*>(reply->data()), static_cast<unsigned>(reply->size()));
  return 0;
}

// Build (or find up to date) the index of the request's column in the object's omap. Its output
// (one JSON object, scan_index.h) does not reach a write op's client, which reads the index header
// instead; so errors are negative errnos, their messages in the OSD log.
int index(cls_method_context_t hctx, ceph::bufferlist* in, ceph::bufferlist* out) {
  sae::scan::Meter meter;
  sae::scan::Error err{0, ""};
  std::string raw = in->to_str(), column;
  std::shared_ptr<ObjectFile> file;
  OmapStore omap(hctx);
  sae::scan::IndexBuild build;
  if (!sae::scan::ParseIndexRequest(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), &column, &err) ||
      !Object(hctx, &file, &err) || !sae::scan::BuildIndex(file, column, &omap, &meter, &build, &err)) {
    return ReplyError(err, false, "index", out);
  }
  out->append(sae::scan::EncodeIndexBuild(build, meter.Finish()[sae::protocol::kWallNs]));
  return 0;
}

}  // namespace

extern "C" void sae_register_extra_methods(cls_handle_t h_class) {
  cls_register_cxx_method(h_class, "scan", CLS_METHOD_RD, sae::guarded<scan>, &h_scan);
  cls_register_cxx_method(h_class, "schema", CLS_METHOD_RD, sae::guarded<schema>, &h_schema);
  cls_register_cxx_method(h_class, "index", CLS_METHOD_RD | CLS_METHOD_WR, sae::guarded<index>, &h_index);
}
