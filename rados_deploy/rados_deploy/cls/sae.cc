// The sae object class: registers `version` and `echo`, initializes Arrow compute, and lets
// other cls/*.cc files register more methods through sae_register_extra_methods.
#include <string>

#include <arrow/compute/initialize.h>
#include <arrow/config.h>

#include "protocol.h"
#include "sae_cls.h"

#define SAE_CLASS_MAJOR 1
#define SAE_CLASS_MINOR 6   // 1.2: reads Arrow IPC objects too; 1.3: CSV objects of the request's schema (protocol 4);
                            // 1.4: requests name their client, replies count its calls beside them (protocol 5);
                            // 1.5: timestamp literals (protocol 6); 1.6: an indexed scan reads a matching
                            // object's pages alone where it has a page index

CLS_VER(SAE_CLASS_MAJOR, SAE_CLASS_MINOR)
CLS_NAME(sae)

static cls_handle_t h_class;
static cls_method_handle_t h_version;
static cls_method_handle_t h_echo;

// {"class":"sae","class_version":"1.6","protocol":6,"arrow":"26.0.1"}
static int version(cls_method_context_t, ceph::bufferlist*, ceph::bufferlist* out) {
  std::string reply = "{\"class\":\"sae\",\"class_version\":\"" + std::to_string(SAE_CLASS_MAJOR) + "." +
                      std::to_string(SAE_CLASS_MINOR) + "\",\"protocol\":" +
                      std::to_string(SAE_SCAN_PROTOCOL) + ",\"arrow\":\"" +
                      arrow::GetBuildInfo().version_string + "\"}";
  out->append(reply);
  return 0;
}

// Returns its input unchanged.
static int echo(cls_method_context_t, ceph::bufferlist* in, ceph::bufferlist* out) {
  out->append(*in);
  return 0;
}

CLS_INIT(sae) {
  CLS_LOG(0, "loading cls_sae");
  arrow::Status st = arrow::compute::Initialize();
  if (!st.ok()) {
    CLS_ERR("sae: arrow::compute::Initialize failed: %s", st.ToString().c_str());
  }
  cls_register("sae", &h_class);
  cls_register_cxx_method(h_class, "version", CLS_METHOD_RD, sae::guarded<version>, &h_version);
  cls_register_cxx_method(h_class, "echo", CLS_METHOD_RD, sae::guarded<echo>, &h_echo);
  if (sae_register_extra_methods != nullptr) {
    sae_register_extra_methods(h_class);
  }
}
