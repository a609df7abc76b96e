// The tflite plugin: the "int8" post-training quantizer and the "tflite" exporter.
#include "exporter.hpp"
#include "quantizer.hpp"

RAMJET_PLUGIN("tflite", RAMJET_PLUGIN_VERSION, ramjet::quantizer<tflite_plugin::Int8Quantizer>("int8"),
              ramjet::exporter<tflite_plugin::TfliteExporter>("tflite"))
