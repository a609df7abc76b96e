// Image files: the image_folder source and the decode_image transform (libpng, libjpeg-turbo).
#include "decode_image.hpp"
#include "image_folder.hpp"

RAMJET_PLUGIN("stock_images", RAMJET_PLUGIN_VERSION,
              ramjet::data_source<stock_images::ImageFolder>("image_folder"),
              ramjet::transform<stock_images::DecodeImage>("decode_image"))
