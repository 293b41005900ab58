/* Subcommands of the gpuinv binary; each returns the process exit code
 * (0 ok, 1 failure, 2 usage error). */
#ifndef GI_CLI_H
#define GI_CLI_H

int cli_serve(int argc, char **argv);
int cli_token(int argc, char **argv);
int cli_user(int argc, char **argv);
int cli_agent(int argc, char **argv);
int cli_db(int argc, char **argv);
int cli_import(int argc, char **argv);
int cli_audit(int argc, char **argv);

#endif
