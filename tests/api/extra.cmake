# api tests: end-to-end oracles (load + run against PyTorch's numbers) and the CLI contract.
# (Included from tests/CMakeLists.txt; CMAKE_CURRENT_LIST_DIR is tests/api.)
#
#   api.gen_models  (fixture) builds small scripted and traced models with real PyTorch
#                   (gen_models.py): archives, inputs, outputs, parameters and buffers
#   api.oracle      the *Oracle suites of api_test: the generated models, ../shared/wild and
#                   examples/tiny_cnn.pt, each either passing or failing with its stated error
#
# Everything generated goes to the build tree.
set(TORCHLESS_ORACLE_PYTHON "/usr/bin/python3" CACHE FILEPATH "Python with torch and torchvision")
set(_api_models ${PROJECT_BINARY_DIR}/api_models)
if(TARGET api_test)
  target_link_libraries(api_test PRIVATE nlohmann_json::nlohmann_json)
  target_compile_definitions(api_test PRIVATE TORCHLESS_API_MODELS="${_api_models}")
  add_dependencies(api_test torchless)  # the CLI tests run the binary

  add_test(NAME api.gen_models
    COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gen_models.py ${_api_models})
  set_tests_properties(api.gen_models PROPERTIES
    FIXTURES_SETUP api_models TIMEOUT 900
    ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")

  add_test(NAME api.oracle COMMAND api_test --gtest_filter=*Oracle.*:*Oracle/*:-*CorpusGraphs*:TraceOracle.*:*CompileOracle*:EngineRecordOracle.*:*QuantizedOracle*:*QuantizedExportOracle*:QuantizedPrintOracle.*:*SeqFusion*)
  set_tests_properties(api.oracle PROPERTIES
    FIXTURES_REQUIRED api_models TIMEOUT 900
    ENVIRONMENT "TORCHLESS_BIN=${PROJECT_BINARY_DIR}/bin/torchless")

  # Issue 12: every generated model compiled into engines, saved, loaded and run
  # (compile_oracle_test.cpp); a separate test so that it runs beside api.oracle.
  add_test(NAME api.compile COMMAND api_test --gtest_filter=*CompileOracle*:EngineRecordOracle.*)
  set_tests_properties(api.compile PROPERTIES
    FIXTURES_REQUIRED api_models TIMEOUT 900
    ENVIRONMENT "TORCHLESS_BIN=${PROJECT_BINARY_DIR}/bin/torchless")
endif()

# Issue 4's acceptance test: our inlined graphs against PyTorch's, per method of real archives.
#
#   api.gen_corpus_graphs  (fixture) saves torchvision / torch.nn models and counts the node
#                          kinds of PyTorch's inlined graphs (gen_inlined_graphs.py)
#   api.corpus_graphs      the CorpusGraphs*Oracle suites of api_test over them (they skip
#                          without TORCHLESS_CORPUS_GRAPHS, i.e. under api.oracle)
set(_api_corpus_graphs ${PROJECT_BINARY_DIR}/api_corpus_graphs)
if(TARGET api_test)
  add_test(NAME api.gen_corpus_graphs
    COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gen_inlined_graphs.py
            ${_api_corpus_graphs})
  set_tests_properties(api.gen_corpus_graphs PROPERTIES
    FIXTURES_SETUP api_corpus_graphs TIMEOUT 900
    ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")

  add_test(NAME api.corpus_graphs
    COMMAND api_test --gtest_filter=CorpusGraphs*Oracle.*:*/CorpusGraphsOracle.*)
  set_tests_properties(api.corpus_graphs PROPERTIES
    FIXTURES_REQUIRED api_corpus_graphs TIMEOUT 900
    ENVIRONMENT "TORCHLESS_CORPUS_GRAPHS=${_api_corpus_graphs}")
endif()

# Issue 8: tracing without Python (api/trace.h), against the TorchScript documentation's
# examples made by real PyTorch.
#
#   api.gen_trace_models  (fixture) gen_trace_models.py: scripted/traced archives, inputs,
#                         PyTorch's outputs, its TracerWarnings and TracingCheckError texts, and
#                         the node kinds of torch.jit.trace(resnet18)
#   api.trace             the TraceOracle suite of api_test over them (api.oracle's filter
#                         leaves it out; without TORCHLESS_TRACE_MODELS its cases skip)
set(_api_trace_models ${PROJECT_BINARY_DIR}/api_trace_models)
if(TARGET api_test)
  add_test(NAME api.gen_trace_models
    COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gen_trace_models.py
            ${_api_trace_models})
  set_tests_properties(api.gen_trace_models PROPERTIES
    FIXTURES_SETUP api_trace_models TIMEOUT 900
    ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")

  add_test(NAME api.trace COMMAND api_test --gtest_filter=TraceOracle.*)
  set_tests_properties(api.trace PROPERTIES
    FIXTURES_REQUIRED api_trace_models TIMEOUT 900
    ENVIRONMENT "TORCHLESS_TRACE_MODELS=${_api_trace_models};TORCHLESS_BIN=${PROJECT_BINARY_DIR}/bin/torchless;PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
endif()

# Issue 15: quantized models against PyTorch's integers.
#
#   api.gen_quantized  (fixture) gen_quantized.py: eager static quantization, quantize_dynamic
#                      and scripted tensor-op cases, each with inputs, PyTorch's outputs and
#                      how to compare them (meta.json)
#   api.quantized      the QuantizedOracle / QuantizedOracleCompiled (int8 engine) /
#                      QuantizedPrintOracle / QuantizedExportOracle (QDQ export run in ONNX
#                      Runtime) suites of api_test over them
set(_api_quantized ${PROJECT_BINARY_DIR}/api_quantized)
if(TARGET api_test)
  add_test(NAME api.gen_quantized
    COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gen_quantized.py ${_api_quantized})
  set_tests_properties(api.gen_quantized PROPERTIES
    FIXTURES_SETUP api_quantized TIMEOUT 900
    ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")

  add_test(NAME api.quantized
    COMMAND api_test --gtest_filter=*QuantizedOracle*:*QuantizedExportOracle*:QuantizedPrintOracle.*)
  set_tests_properties(api.quantized PROPERTIES
    FIXTURES_REQUIRED api_quantized TIMEOUT 900
    ENVIRONMENT "TORCHLESS_QUANT_MODELS=${_api_quantized};TORCHLESS_BIN=${PROJECT_BINARY_DIR}/bin/torchless")
  # The same cases with the reference conv loops instead of oneDNN's int8 accumulators
  # (ops/quantized.cpp, Note [oneDNN int8 accumulators]): both must give PyTorch's integers.
  add_test(NAME api.quantized_reference COMMAND api_test --gtest_filter=Quantized/QuantizedOracle.*)
  set_tests_properties(api.quantized_reference PROPERTIES
    FIXTURES_REQUIRED api_quantized TIMEOUT 900
    ENVIRONMENT "TORCHLESS_QUANT_MODELS=${_api_quantized};TORCHLESS_QCONV_REFERENCE=1")
  # Loaded archives run their quantized segments in the engine (int8 layers, issue 15 part 6);
  # TORCHLESS_JIT=0 runs the same cases in the interpreter, i.e. the kernels' own oneDNN path.
  add_test(NAME api.quantized_interpreter COMMAND api_test --gtest_filter=Quantized/QuantizedOracle.*)
  set_tests_properties(api.quantized_interpreter PROPERTIES
    FIXTURES_REQUIRED api_quantized TIMEOUT 900
    ENVIRONMENT "TORCHLESS_QUANT_MODELS=${_api_quantized};TORCHLESS_JIT=0")
endif()

# Issue 13: fused sequence layers (src/convert/engine/seq_layers.h) against PyTorch's numbers,
# and the engine reporting the fused path (seq_fusion_oracle_test.cpp).
if(TARGET api_test)
  add_test(NAME api.gen_seq_models
    COMMAND ${TORCHLESS_ORACLE_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/gen_seq_models.py
            ${PROJECT_BINARY_DIR}/api_seq_models)
  set_tests_properties(api.gen_seq_models PROPERTIES
    FIXTURES_SETUP api_seq_models TIMEOUT 300
    ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1;OMP_NUM_THREADS=1")
  add_test(NAME api.seq_fusion COMMAND api_test --gtest_filter=*SeqFusion*)
  set_tests_properties(api.seq_fusion PROPERTIES FIXTURES_REQUIRED api_seq_models TIMEOUT 300)
endif()
