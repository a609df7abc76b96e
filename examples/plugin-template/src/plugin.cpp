// The plugin's one exported symbol: its name and version, and its components as ramjet::<kind><Class>("name").
#include "fixed_precision.hpp"
#include "invert.hpp"

RAMJET_PLUGIN("template_invert", RAMJET_PLUGIN_VERSION,
              ramjet::transform<template_plugin::Invert>("invert"),
              ramjet::precision_policy<template_plugin::FixedPrecision>("fixed_precision"))
