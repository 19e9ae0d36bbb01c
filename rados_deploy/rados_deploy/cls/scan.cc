// The `scan` method of the sae object class: reads its object as Parquet through cls_cxx_read
// (only the byte ranges the projection and filter need), filters and projects in batches with
// Arrow compute and replies with the call's stats and an Arrow IPC stream. Request and reply:
// docs/protocol.md.
#include <cerrno>

#include <arrow/buffer.h>
#include <arrow/io/interfaces.h>
#include <arrow/memory_pool.h>

#include "sae_cls.h"
#include "scan_core.h"

namespace {

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
  arrow::Result<std::shared_ptr<arrow::Buffer>> ReadAt(int64_t position, int64_t nbytes) override {
    nbytes = std::min<int64_t>(std::max<int64_t>(nbytes, 0), std::max<int64_t>(0, size_ - position));
    ARROW_ASSIGN_OR_RAISE(auto buf, arrow::AllocateResizableBuffer(nbytes, arrow::system_memory_pool()));
    ARROW_ASSIGN_OR_RAISE(int64_t n, ReadAt(position, nbytes, buf->mutable_data()));
    ARROW_RETURN_NOT_OK(buf->Resize(n));
    return std::shared_ptr<arrow::Buffer>(std::move(buf));
  }

 private:
  cls_method_context_t hctx_;
  int64_t size_;
  int64_t pos_ = 0;
  bool closed_ = false;
};

cls_method_handle_t h_scan;
cls_method_handle_t h_schema;

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

void Append(const std::shared_ptr<arrow::Buffer>& data, ceph::bufferlist* out) {
  out->append(reinterpret_cast<const char*>(data->data()), static_cast<unsigned>(data->size()));
}

// Success: the reply header (the call's stats) and the IPC stream, 0.
int scan(cls_method_context_t hctx, ceph::bufferlist* in, ceph::bufferlist* out) {
  sae::scan::Meter meter;
  sae::scan::Request req;
  sae::scan::Error err{0, ""};
  std::string raw = in->to_str();
  bool ok = sae::scan::ParseRequest(reinterpret_cast<const uint8_t*>(raw.data()), raw.size(), &req, &err);
  std::shared_ptr<arrow::Buffer> reply;
  std::shared_ptr<ObjectFile> file;
  ok = ok && Object(hctx, &file, &err) && sae::scan::Scan(file, req, &meter, &reply, &err);
  if (!ok) return ReplyError(err, req.flags & sae::protocol::kFlagErrorsInBand, "scan", out);
  ceph::bufferlist body;
  {
    sae::scan::Phase p(&meter, sae::protocol::kReplyNs);
    Append(reply, &body);
  }
  out->append(sae::scan::EncodeReplyHeader(meter.Finish()));
  out->claim_append(body);
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
  Append(reply, out);
  return 0;
}

}  // namespace

extern "C" void sae_register_extra_methods(cls_handle_t h_class) {
  cls_register_cxx_method(h_class, "scan", CLS_METHOD_RD, sae::guarded<scan>, &h_scan);
  cls_register_cxx_method(h_class, "schema", CLS_METHOD_RD, sae::guarded<schema>, &h_schema);
}
