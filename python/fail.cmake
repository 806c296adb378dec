# Fails a test with the reason in $LUMINAL_PROBLEM (a test that cannot run says why).
message(FATAL_ERROR "$ENV{LUMINAL_PROBLEM}")
