// The stock transforms, one shared object.
#include "blur.hpp"
#include "brightness_contrast.hpp"
#include "cast.hpp"
#include "copy.hpp"
#include "downscale.hpp"
#include "noise.hpp"
#include "normalize.hpp"
#include "one_hot.hpp"
#include "random_crop.hpp"
#include "random_flip.hpp"
#include "resize.hpp"

RAMJET_PLUGIN("stock_transforms", RAMJET_PLUGIN_VERSION,
              ramjet::transform<stock_transforms::Normalize>("normalize"),
              ramjet::transform<stock_transforms::RandomFlip>("random_flip"),
              ramjet::transform<stock_transforms::Cast>("cast"),
              ramjet::transform<stock_transforms::RandomCrop>("random_crop"),
              ramjet::transform<stock_transforms::RandomBrightness>("random_brightness"),
              ramjet::transform<stock_transforms::RandomContrast>("random_contrast"),
              ramjet::transform<stock_transforms::Resize>("resize"),
              ramjet::transform<stock_transforms::OneHot>("one_hot"),
              ramjet::transform<stock_transforms::Copy>("copy"),
              ramjet::transform<stock_transforms::Blur>("blur"),
              ramjet::transform<stock_transforms::Noise>("noise"),
              ramjet::transform<stock_transforms::Downscale>("downscale"))
