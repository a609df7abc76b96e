// The oneDNN plugin: the "cpu" backend.
#include "backend.hpp"

RAMJET_PLUGIN("onednn", RAMJET_PLUGIN_VERSION, ramjet::backend<onednn::CpuBackend>("cpu"))
