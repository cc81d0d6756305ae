# cmake -P RunMsl.cmake -DMSL=<fm-msl> -DSPV=<k.spv> -DDIR=<out dir> -DLOG=<k.metal.txt>
# Runs fm-msl on one kernel and keeps its report line (the threadgroup size
# that EmbedMsl.cmake embeds); a failed translation fails the build.
execute_process(COMMAND ${MSL} -o ${DIR} ${SPV}
                OUTPUT_FILE ${LOG} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fm-msl ${SPV}: ${err}")
endif()
