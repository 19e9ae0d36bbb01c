// Helpers every source file of the sae object class may use (rados_deploy builds all cls/*.cc
// into one libcls_sae.so).
//
// An exception escaping a class method aborts the OSD, so register methods through
// sae::guarded, which turns any exception into -EIO and logs it to the OSD log:
//
//   cls_register_cxx_method(h, "scan", CLS_METHOD_RD, sae::guarded<scan>, &h_scan);
#pragma once

#include <cerrno>
#include <exception>

#include <rados/objclass.h>

namespace sae {

template <int (*Method)(cls_method_context_t, ceph::bufferlist*, ceph::bufferlist*)>
int guarded(cls_method_context_t hctx, ceph::bufferlist* in, ceph::bufferlist* out) {
  try {
    return Method(hctx, in, out);
  } catch (const std::exception& e) {
    CLS_ERR("sae: method failed: %s", e.what());
  } catch (...) {
    CLS_ERR("sae: method failed with an unknown exception");
  }
  return -EIO;
}

}  // namespace sae

// Defined (optionally) by another source file of the class to register more methods.
extern "C" void sae_register_extra_methods(cls_handle_t h_class) __attribute__((weak));
