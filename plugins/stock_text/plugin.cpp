// Text for sequence models, one shared object: data_source "text" (token windows with next-token labels).
#include "text_source.hpp"

RAMJET_PLUGIN("stock_text", RAMJET_PLUGIN_VERSION, ramjet::data_source<stock_text::TextSource>("text"))
