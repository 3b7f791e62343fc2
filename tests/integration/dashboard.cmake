# The dashboard in headless Chromium (dashboard_browser_test.py): a standalone run of the digits
# example with the page open while 3 rounds happen; the screenshot is kept as
# <build>/dashboard_browser/dashboard.png. Skipped (77) only when chromium is not installed
# (tools/setup.sh --tests installs it).
add_test(NAME dashboard_browser
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/dashboard_browser_test.py
                 $<TARGET_FILE:sedna-lc> ${CMAKE_BINARY_DIR}/dashboard_browser --rounds 3)
set_tests_properties(dashboard_browser PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77)
