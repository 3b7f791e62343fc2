# The lifelong-learning example (examples/lifelong_learning/seasons): sedna-lc standalone runs the
# seasons LifelongLearningJob with real scikit-learn workers while the csv dataset grows by
# replacement; the demo exits 0 once 2 versions were trained, evaluated and deployed and (--check)
# the operator's views show them: the round history (its rounds, train, eval, deploy count), the
# STAGE column of `sedna-lc status` live and from the database, the dashboard feed's LL chart
# series and /metrics' deploy count (docs/dashboard.md).
add_test(NAME ll_example_demo
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/examples/lifelong_learning/seasons/demo.py
                 $<TARGET_FILE:sedna-lc> --versions 2 --check)
set_tests_properties(ll_example_demo PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)
