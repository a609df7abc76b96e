// The stock data sources, one shared object.
#include "idx_source.hpp"
#include "synthetic_source.hpp"

RAMJET_PLUGIN("stock_sources", RAMJET_PLUGIN_VERSION,
              ramjet::data_source<stock_sources::IdxSource>("idx"),
              ramjet::data_source<stock_sources::SyntheticSource>("synthetic"))
