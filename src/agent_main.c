/* gpuinv-agent: the agent alone, for GPU hosts (`gpuinv agent` in the full
 * binary runs the same code). */
#include "cli/cli.h"

int main(int argc, char **argv) { return cli_agent(argc, argv); }
