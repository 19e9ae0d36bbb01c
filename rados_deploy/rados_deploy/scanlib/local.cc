// The sae class's scan, run on a client over an object it read whole: the same core (cls/scan_*)
// behind a C call, so a reader that pulls an object's work back from a busy OSD gets the reply
// the class would have sent, byte for byte but for the stats (docs/protocol.md).
//
//   int sae_scan_local(const uint8_t* object, int64_t object_size, const uint8_t* request,
//                      int64_t request_size, uint8_t** reply, int64_t* reply_size);
//   void sae_scan_free(uint8_t* reply);
//
// The reply (the class's reply header and body, or its error frame: errors are always in band)
// is malloc'd; free it with sae_scan_free. Returns 0, or -ENOMEM when no reply could be made.
// Safe to call from many threads at once.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>

#include <arrow/buffer.h>
#include <arrow/compute/initialize.h>
#include <arrow/io/memory.h>

#include "scan_core.h"

namespace {

int Reply(const std::string& head, const uint8_t* body, int64_t body_size, uint8_t** reply, int64_t* reply_size) {
  auto* out = static_cast<uint8_t*>(std::malloc(head.size() + static_cast<size_t>(body_size) + 1));
  if (out == nullptr) return -ENOMEM;
  std::memcpy(out, head.data(), head.size());
  if (body_size > 0) std::memcpy(out + head.size(), body, static_cast<size_t>(body_size));
  *reply = out;
  *reply_size = static_cast<int64_t>(head.size()) + body_size;
  return 0;
}

int Failed(const sae::scan::Error& err, uint8_t** reply, int64_t* reply_size) {
  return Reply(sae::scan::EncodeError(err), nullptr, 0, reply, reply_size);
}

}  // namespace

extern "C" int sae_scan_local(const uint8_t* object, int64_t object_size, const uint8_t* request,
                              int64_t request_size, uint8_t** reply, int64_t* reply_size) {
  static std::once_flag initialized;
  static arrow::Status init;
  try {
    std::call_once(initialized, [] { init = arrow::compute::Initialize(); });
    if (!init.ok()) return Failed({EIO, "Arrow compute failed to initialize: " + init.ToString()}, reply, reply_size);
    sae::scan::Meter meter;
    sae::scan::Request req;
    sae::scan::Error err{0, ""};
    if (!sae::scan::ParseRequest(request, static_cast<size_t>(request_size), &req, &err)) {
      return Failed(err, reply, reply_size);
    }
    auto file = std::make_shared<arrow::io::BufferReader>(std::make_shared<arrow::Buffer>(object, object_size));
    auto created = arrow::io::BufferOutputStream::Create(1 << 16, sae::scan::Pool());
    if (!created.ok()) return Failed({ENOMEM, created.status().ToString()}, reply, reply_size);
    std::shared_ptr<arrow::io::BufferOutputStream> out = *created;
    uint16_t body = sae::protocol::kBodyArrowIpc;
    if (!sae::scan::Scan(file, req, &meter, out, &body, &err)) return Failed(err, reply, reply_size);
    auto finished = out->Finish();
    if (!finished.ok()) return Failed({EIO, finished.status().ToString()}, reply, reply_size);
    std::shared_ptr<arrow::Buffer> stream = *finished;
    std::string head = sae::scan::EncodeReplyHeader(meter.Finish(), body);
    return Reply(head, stream->data(), stream->size(), reply, reply_size);
  } catch (const std::exception& e) {
    return Failed({EIO, std::string("scan failed: ") + e.what()}, reply, reply_size);
  } catch (...) {
    return Failed({EIO, "scan failed with an unknown exception"}, reply, reply_size);
  }
}

extern "C" void sae_scan_free(uint8_t* reply) { std::free(reply); }
