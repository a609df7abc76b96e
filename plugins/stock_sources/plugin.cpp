// The stock data sources, one shared object.
#include "csv_source.hpp"
#include "idx_source.hpp"
#include "npy_source.hpp"
#include "synthetic_source.hpp"
#ifdef RAMJET_HAVE_LIBZIP
#include "npz_source.hpp"
#endif

RAMJET_PLUGIN("stock_sources", RAMJET_PLUGIN_VERSION,
              ramjet::data_source<stock_sources::IdxSource>("idx"),
              ramjet::data_source<stock_sources::SyntheticSource>("synthetic"),
              ramjet::data_source<stock_sources::NpySource>("npy"),
#ifdef RAMJET_HAVE_LIBZIP
              ramjet::data_source<stock_sources::NpzSource>("npz"),
#endif
              ramjet::data_source<stock_sources::CsvSource>("csv"))
