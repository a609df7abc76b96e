// The `ramjet` command: parses the command line, reads the manifest into a plan, calls the core, prints. Nothing
// else lives here; the commands are listed in kUsage below and in the README.
// Exit codes: 0 success, 2 bad usage or invalid input, 1 runtime failure.
#include "escaped_json_error.hpp"

#include "ramjet/deploy/generate.hpp"
#include "ramjet/deploy/model_eval.hpp"
#include "ramjet/model/graph.hpp"
#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/atomic_file.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/json_text.hpp"
#include "ramjet/plugin/log.hpp"
#include "ramjet/plugin/machine_limits.hpp"
#include "ramjet/plugin/plugin_listing.hpp"
#include "ramjet/plugin/plugin_registry.hpp"
#include "ramjet/plugin/trace.hpp"
#include "ramjet/report/report_page.hpp"
#include "ramjet/run/launch.hpp"
#include "ramjet/run/mpirun_rank.hpp"
#include "ramjet/run/run.hpp"

#include <boost/program_options.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#ifndef RAMJET_VERSION
#define RAMJET_VERSION "0.0.0"
#endif

namespace po = boost::program_options;
using namespace ramjet::core;

namespace {

constexpr int kExitOk = 0;
constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;
// Messages list every problem of a manifest; beyond this they are cut (an echoed value can be megabytes).
constexpr size_t kMessageLimit = 8192;

const char* kUsage =
    "usage: ramjet [--help] [--version] COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  plugins [--json] [--load]                     list plugins found on the search path and why any was skipped\n"
    "  validate MANIFEST [--set P=V]...              check a pipeline manifest; report every problem\n"
    "  run MANIFEST [--report FILE] [--trace FILE] [--set P=V]... [--resume] [--nproc N]\n"
    "                                                train the model (or, without one, run the input pipelines);\n"
    "                                                --nproc N: on N local ranks (data-parallel, gloo)\n"
    "  eval MANIFEST [--checkpoint FILE] [--precision float32|int8] [--batch N] [--threads N] [--json]\n"
    "       [--predictions DIR] [--trace FILE] [--set P=V]...\n"
    "                                                a checkpoint's metrics and samples/s on the eval data\n"
    "  generate MANIFEST --prompt TEXT [--tokens N] [--temperature T] [--top-k K] [--seed S] [--checkpoint FILE]\n"
    "       [--threads N] [--json] [--set P=V]...\n"
    "                                                sample text from a trained language model's checkpoint\n"
    "  graph MANIFEST [--json] [--set P=V]...        show the model's layers, output shapes and parameters\n"
    "  pipeline MANIFEST [--name train|eval] [--report FILE] [--trace FILE] [--set P=V]...\n"
    "                                                iterate one input pipeline alone and report its throughput\n"
    "  report RUN.json... -o FILE [--label NAME]... [--title TEXT]\n"
    "                                                an HTML page of training runs' curves, speed-ups and verdicts\n"
    "\n"
    "environment: RAMJET_PLUGIN_PATH, RAMJET_PLUGINS_SELECT, RAMJET_PLUGINS_DISABLE, RAMJET_LOADER_DEBUG=1,\n"
    "             RAMJET_LOG_LEVEL=debug|info|warning|error\n"
    "exit codes: 0 success, 2 bad usage or invalid input, 1 runtime failure\n";

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& options,
                        const po::positional_options_description& positional) {
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
  po::notify(vm);
  return vm;
}

int command_plugins(const std::vector<std::string>& args) {
  po::options_description options("ramjet plugins");
  options.add_options()("help,h", "show this help")("json", "print JSON")(
      "load", "load every usable plugin and report failures");
  auto vm = parse(args, options, {});
  if (vm.count("help")) {
    std::cout << options;
    return kExitOk;
  }
  PluginRegistry registry(discovery_options_from_environment());
  nlohmann::json listing = list_plugins(registry, vm.count("load") > 0);
  if (vm.count("json")) std::cout << listing.dump(2) << "\n";
  else print_plugin_listing(listing, std::cout);
  return listing_has_load_failures(listing) ? kExitRuntime : kExitOk;
}

// Every manifest command takes MANIFEST, --set and --help; `more` adds its own flags.
po::options_description manifest_options(const std::string& title) {
  po::options_description options(title);
  options.add_options()("help,h", "show this help")("manifest", po::value<std::string>(), "pipeline manifest")(
      "set", po::value<std::vector<std::string>>()->composing(), "override a field: POINTER=VALUE");
  return options;
}

// Parses a manifest command's arguments; false when --help was printed instead.
bool parse_manifest_command(const std::vector<std::string>& args, const po::options_description& options,
                            po::variables_map& vm) {
  po::positional_options_description positional;
  positional.add("manifest", 1);
  vm = parse(args, options, positional);
  if (!vm.count("help")) return true;
  std::cout << options;
  return false;
}

// An output named on the command line is checked before the work that ends in writing it.
void refuse_unwritable(const std::string& path, const std::string& flag) {
  if (const std::string why = prepare_destination(path); !why.empty())
    throw InvalidInput(flag + ": " + excerpt(why, 400));
}

const char* kTraceHelp = "write a Chrome trace (chrome://tracing, Perfetto) of where the time went to FILE";

// `--trace FILE` around `work`: recorded only while the work runs, written once it has ended (its threads joined).
template <class Work>
nlohmann::json traced(const po::variables_map& vm, Work&& work) {
  if (!vm.count("trace")) return work();
  Trace::start(0, "rank 0");  // one process track per rank; one rank today
  nlohmann::json report = work();
  Trace::finish_to(vm["trace"].as<std::string>());
  return report;
}

// The manifest being read, for the last-resort message in main().
std::string g_manifest_name;

PipelineManifest manifest_from(const po::variables_map& vm) {
  if (!vm.count("manifest")) throw po::error("missing MANIFEST");
  g_manifest_name = vm["manifest"].as<std::string>();
  PipelineManifest manifest = load_pipeline_manifest(vm["manifest"].as<std::string>());
  if (vm.count("set"))
    for (const auto& assignment : vm["set"].as<std::vector<std::string>>()) apply_override(manifest, assignment);
  return manifest;
}

// Mistakes that still train: on stderr, before the work, so they are seen even when --quiet.
void print_warnings(const PipelineManifest& manifest, const Plan& plan) {
  for (const auto& w : plan.warnings) std::cerr << "ramjet: warning: " << manifest.where(w.pointer) << ": " << w.message << "\n";
}

int command_validate(const std::vector<std::string>& args) {
  const auto options = manifest_options("ramjet validate MANIFEST");
  po::variables_map vm;
  if (!parse_manifest_command(args, options, vm)) return kExitOk;
  PipelineManifest manifest = manifest_from(vm);
  PluginRegistry registry(discovery_options_from_environment());
  const Plan plan = require_plan(manifest, registry);
  print_warnings(manifest, plan);
  std::cout << manifest.path.string() << ": valid" << (plan.warnings.empty() ? "" : " (with warnings)") << "\n";
  return kExitOk;
}

// `run` and `pipeline` share their flags: MANIFEST, --report, --set, --quiet (and `pipeline` adds --name).
int command_running(const std::vector<std::string>& args, bool whole_run) {
  auto options = manifest_options(whole_run ? "ramjet run MANIFEST" : "ramjet pipeline MANIFEST");
  options.add_options()("report", po::value<std::string>(), "write a JSON report to FILE")(
      "trace", po::value<std::string>(), kTraceHelp)("quiet,q", "print nothing but errors");
  if (whole_run)
    options.add_options()("resume", "continue training from the newest checkpoint in train.checkpoint.dir")(
        "nproc", po::value<int>(), "train on N local ranks, each a process with cores / N threads (train.strategy: "
                                   "gloo unless the manifest names one)");
  else options.add_options()("name", po::value<std::string>()->default_value("train"), "which input pipeline: train or eval");
  po::variables_map vm;
  if (!parse_manifest_command(args, options, vm)) return kExitOk;
  PipelineManifest manifest = manifest_from(vm);
  PluginRegistry registry(discovery_options_from_environment());
  if (whole_run && vm.count("nproc")) {
    const LaunchOptions launch = local_launch(args, manifest, vm["nproc"].as<int>());
    require_plan(manifest, registry);  // bad input is reported once, before any rank starts
    if (vm.count("report")) refuse_unwritable(vm["report"].as<std::string>(), "--report");
    return launch_local_ranks(launch);
  }
  if (whole_run) adopt_mpirun_rank(manifest);
  const Plan plan = require_plan(manifest, registry);
  print_warnings(manifest, plan);
  if (vm.count("report")) refuse_unwritable(vm["report"].as<std::string>(), "--report");
  if (vm.count("trace")) refuse_unwritable(vm["trace"].as<std::string>(), "--trace");
  RunOptions run_options;
  if (!vm.count("quiet")) run_options.progress = &std::cout;
  run_options.terminal = isatty(STDOUT_FILENO) != 0;
  run_options.resume = vm.count("resume") > 0;
  nlohmann::json report = traced(vm, [&] {
    return whole_run ? run_pipeline(plan, registry, run_options)
                     : iterate_pipeline(plan, vm["name"].as<std::string>(), registry, run_options);
  });
  report["ramjet_version"] = RAMJET_VERSION;
  // Under a data-parallel strategy rank 0 alone writes the report, as it alone prints and checkpoints.
  const bool rank_zero = !report.contains("train") || report["train"].value("rank", 0) == 0;
  if (vm.count("report") && rank_zero) write_file_atomically(vm["report"].as<std::string>(), report.dump(2) + "\n");
  return kExitOk;
}

int command_eval(const std::vector<std::string>& args) {
  auto options = manifest_options("ramjet eval MANIFEST");
  options.add_options()("checkpoint", po::value<std::string>(), "checkpoint file (default: the newest in train.checkpoint.dir)")(
      "precision", po::value<std::string>()->default_value("float32"),
      "float32, or int8: calibrate and quantize as the manifest's export section says, then run int8 inference")(
      "batch", po::value<int64_t>(), "evaluation batch size (default: the eval pipeline's)")(
      "threads", po::value<int64_t>(), "backend threads (default: train.threads or the backend's)")(
      "predictions", po::value<std::string>(),
      "write what the model predicted to DIR: predictions.npy, classes.npy for classifiers, a PNG per image")(
      "json", "print the result as JSON")("report", po::value<std::string>(), "write the result as JSON to FILE")(
      "trace", po::value<std::string>(), kTraceHelp);
  po::variables_map vm;
  if (!parse_manifest_command(args, options, vm)) return kExitOk;
  PipelineManifest manifest = manifest_from(vm);
  PluginRegistry registry(discovery_options_from_environment());
  const Plan plan = require_plan(manifest, registry);
  EvalOptions eval;
  if (vm.count("checkpoint")) eval.checkpoint = vm["checkpoint"].as<std::string>();
  eval.precision = vm["precision"].as<std::string>();
  if (vm.count("batch")) {
    eval.batch = vm["batch"].as<int64_t>();
    if (eval.batch < 1 || eval.batch > kMaxBatch)
      throw po::error("--batch must be from 1 to " + std::to_string(kMaxBatch) + ", got " + std::to_string(eval.batch));
  }
  if (vm.count("threads")) {
    eval.threads = vm["threads"].as<int64_t>();
    if (eval.threads < 1 || eval.threads > max_threads())
      throw po::error("--threads must be from 1 to " + max_threads_explained() + ", got " + std::to_string(eval.threads));
  }
  if (vm.count("predictions")) eval.predictions = vm["predictions"].as<std::string>();
  if (vm.count("predictions"))
    refuse_unwritable((std::filesystem::path(vm["predictions"].as<std::string>()) / "predictions.npy").string(),
                      "--predictions");
  if (vm.count("report")) refuse_unwritable(vm["report"].as<std::string>(), "--report");
  if (vm.count("trace")) refuse_unwritable(vm["trace"].as<std::string>(), "--trace");
  if (!vm.count("json")) eval.progress = &std::cout;
  nlohmann::json report = traced(vm, [&] { return evaluate_checkpoint(plan, registry, eval); });
  report["ramjet_version"] = RAMJET_VERSION;
  if (vm.count("json")) std::cout << report.dump() << "\n";
  if (vm.count("report")) write_file_atomically(vm["report"].as<std::string>(), report.dump(2) + "\n");
  return kExitOk;
}

int command_generate(const std::vector<std::string>& args) {
  auto options = manifest_options("ramjet generate MANIFEST --prompt TEXT");
  options.add_options()("prompt", po::value<std::string>(), "the text to continue")(
      "tokens", po::value<int64_t>()->default_value(200), "how many tokens to sample")(
      "temperature", po::value<double>()->default_value(1.0), "softmax temperature; 0 takes the most likely token")(
      "top-k", po::value<int64_t>()->default_value(0), "sample among the K most likely tokens only (0: all)")(
      "seed", po::value<uint64_t>()->default_value(0), "the sampler's seed: the same seed gives the same text")(
      "checkpoint", po::value<std::string>(), "checkpoint file (default: the newest in train.checkpoint.dir)")(
      "threads", po::value<int64_t>(), "backend threads (default: train.threads or the backend's)")(
      "json", "print the result as JSON instead of the text");
  po::variables_map vm;
  if (!parse_manifest_command(args, options, vm)) return kExitOk;
  if (!vm.count("prompt")) throw po::error("missing --prompt TEXT");
  GenerateOptions g;
  g.prompt = vm["prompt"].as<std::string>();
  g.tokens = vm["tokens"].as<int64_t>();
  if (g.tokens < 1 || g.tokens > 1000000) throw po::error("--tokens must be from 1 to 1000000");
  g.temperature = vm["temperature"].as<double>();
  g.top_k = vm["top-k"].as<int64_t>();
  g.seed = vm["seed"].as<uint64_t>();
  if (vm.count("checkpoint")) g.checkpoint = vm["checkpoint"].as<std::string>();
  if (vm.count("threads")) {
    g.threads = vm["threads"].as<int64_t>();
    if (g.threads < 1 || g.threads > max_threads())
      throw po::error("--threads must be from 1 to " + max_threads_explained() + ", got " + std::to_string(g.threads));
  }
  PipelineManifest manifest = manifest_from(vm);
  PluginRegistry registry(discovery_options_from_environment());
  const Plan plan = require_plan(manifest, registry);
  if (!vm.count("json")) g.out = &std::cout;
  nlohmann::json result = generate_text(plan, registry, g);
  if (vm.count("json")) std::cout << result.dump() << "\n";
  return kExitOk;
}

int command_graph(const std::vector<std::string>& args) {
  auto options = manifest_options("ramjet graph MANIFEST");
  options.add_options()("json", "print the graph IR a backend compiles");
  po::variables_map vm;
  if (!parse_manifest_command(args, options, vm)) return kExitOk;
  PipelineManifest manifest = manifest_from(vm);
  PluginRegistry registry(discovery_options_from_environment());
  // The graph alone: other sections may still be in the making.
  PlanReading reading = read_plan(manifest, registry);
  if (!reading.plan.graph) {
    if (!reading.problems.empty()) require_plan(manifest, registry);  // throws, listing every problem
    throw InvalidInput(manifest.where("/model") + ": the manifest has no model");
  }
  if (vm.count("json")) std::cout << reading.plan.graph->ir.dump(2) << "\n";
  else std::cout << graph_summary(*reading.plan.graph);
  return kExitOk;
}

// `ramjet report`: the reports of `ramjet run --report` as one HTML page; the first run is the speed-ups' baseline.
int command_report(const std::vector<std::string>& args) {
  po::options_description options("ramjet report RUN.json... -o FILE");
  options.add_options()("help,h", "show this help")(
      "runs", po::value<std::vector<std::string>>(), "reports of `ramjet run --report`; the first is the baseline")(
      "output,o", po::value<std::string>(), "write the HTML page to FILE")(
      "label", po::value<std::vector<std::string>>()->composing(),
      "a short name per run, once per report in order (default: each report's file name without its extension)")(
      "title", po::value<std::string>(), "the page's title (default: names the runs' manifest)");
  po::positional_options_description positional;
  positional.add("runs", -1);
  const auto vm = parse(args, options, positional);
  if (vm.count("help")) {
    std::cout << options;
    return kExitOk;
  }
  if (!vm.count("runs")) throw po::error("missing RUN.json: one or more reports of `ramjet run --report FILE`");
  if (!vm.count("output")) throw po::error("missing --output FILE (-o FILE): where to write the HTML page");
  const std::string output = vm["output"].as<std::string>();
  std::vector<std::filesystem::path> files;
  for (const auto& f : vm["runs"].as<std::vector<std::string>>()) {
    std::error_code ec;
    if (std::filesystem::equivalent(f, output, ec))
      throw InvalidInput("--output: " + output + " is one of the run reports; the page would replace it");
    files.emplace_back(f);
  }
  refuse_unwritable(output, "--output");
  const std::vector<std::string> labels =
      vm.count("label") ? vm["label"].as<std::vector<std::string>>() : std::vector<std::string>{};
  const auto runs = read_labelled_runs(files, labels);
  write_file_atomically(output, render_report_page(runs, vm.count("title") ? vm["title"].as<std::string>() : ""));
  std::cout << output << ": " << runs.size() << (runs.size() == 1 ? " run\n" : " runs\n");
  return kExitOk;
}

int dispatch(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string command = args.front();
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  if (command == "--version") {
    std::cout << "ramjet " << RAMJET_VERSION << " (plugin ABI " << RAMJET_ABI_VERSION << ")\n";
    return kExitOk;
  }
  if (command == "plugins") return command_plugins(rest);
  if (command == "validate") return command_validate(rest);
  if (command == "run") return command_running(rest, true);
  if (command == "pipeline") return command_running(rest, false);
  if (command == "graph") return command_graph(rest);
  if (command == "generate") return command_generate(rest);
  if (command == "eval") return command_eval(rest);
  if (command == "report") return command_report(rest);
  std::cerr << "ramjet: unknown command '" << command << "'\n" << kUsage;
  return kExitUsage;
}

// The command, its failures turned into messages and exit codes.
int run_command(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const po::error& e) {
    std::cerr << "ramjet: " << excerpt(e.what(), kMessageLimit) << "\n(see `ramjet --help`)\n";
    return kExitUsage;
  } catch (const InvalidInput& e) {
    std::cerr << "ramjet: error: " << excerpt(e.what(), kMessageLimit) << "\n";
    return kExitUsage;
  } catch (const nlohmann::json::exception& e) {
    return ramjet::host::report_escaped_json_error(e, g_manifest_name, std::cerr);
  } catch (const std::bad_alloc&) {
    std::cerr << "ramjet: failed: out of memory (an allocation was refused; a smaller batch, model or cache needs "
                 "less)\n";
    return kExitRuntime;
  } catch (const std::exception& e) {
    std::cerr << "ramjet: failed: " << excerpt(e.what(), kMessageLimit) << "\n";
    return kExitRuntime;
  } catch (...) {
    std::cerr << "ramjet: failed: unknown error\n";
    return kExitRuntime;
  }
}

}  // namespace

int main(int argc, char** argv) {
  // How OpenMP's idle threads (oneDNN's, GNU libgomp) wait for the next parallel region. By default they spin
  // about 3 ms, which starves a process that competes for the cores: 1.7x slower training beside one busy process
  // on 2 cores. Sleeping at once (passive) costs a wake-up of about 40 us per oneDNN primitive instead, 20-30 % of
  // a small model's step on a 2-vCPU VM. A short spin (3,000 rounds, some tens of microseconds) keeps the threads
  // awake between the primitives of one step and asleep otherwise: measured on the deblurring U-Net, as fast as
  // spinning when the machine is quiet and as fast as passive beside a busy process (docs/benchmarks.md). Set
  // before any plugin loads its runtime; a user's own setting of either variable wins.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr && std::getenv("GOMP_SPINCOUNT") == nullptr)
    setenv("GOMP_SPINCOUNT", "3000", 0);
  setenv("OMP_WAIT_POLICY", "passive", 0);
  // The least a log line must be to be printed: the plugins' debug lines (a backend's plans, what the autotuner
  // chose, which runs a CUDA graph replays) are for the asking.
  if (const char* wanted = ramjet::core::trusted_getenv("RAMJET_LOG_LEVEL"); wanted != nullptr && *wanted != '\0') {
    const auto level = ramjet::core::log_level_named(wanted);
    if (!level) {
      std::cerr << "ramjet: error: RAMJET_LOG_LEVEL must be debug, info, warning or error, got '"
                << excerpt(wanted, 64) << "'\n";
      return kExitUsage;
    }
    ramjet::core::set_log_level(*level);
  }
  const int code = run_command(argc, argv);
  if (code != kExitOk) remove_made_folders_left_empty();  // a run that failed leaves no empty output folder
  return code;
}
