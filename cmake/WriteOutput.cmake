# cmake -DCOMMAND="prog;arg;..." -DOUTPUT=file [-DCOMPRESS=ON] -P WriteOutput.cmake
# Runs COMMAND and writes what it prints to OUTPUT, failing the build when the command fails.
execute_process(COMMAND ${COMMAND} OUTPUT_FILE ${OUTPUT} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  file(REMOVE ${OUTPUT})
  message(FATAL_ERROR "${COMMAND} failed: ${result}")
endif()
