// TFRecord files of tf.train.Example records (protobuf-lite).
#include "tfrecord_source.hpp"

RAMJET_PLUGIN("stock_records", RAMJET_PLUGIN_VERSION,
              ramjet::data_source<stock_records::TFRecordSource>("tfrecord"))
