// The Sage extension: the grammar, language configuration and snippets are declared in package.json; this
// module starts `sage lsp` (the command of the `sage.path` setting) as the language server of .sg files.
import * as vscode from "vscode";
import { Executable, LanguageClient, LanguageClientOptions, TransportKind } from "vscode-languageclient/node";

let client: LanguageClient | undefined;

function serverOptions(): Executable {
  const command = vscode.workspace.getConfiguration("sage").get<string>("path", "sage") || "sage";
  return { command, args: ["lsp"], transport: TransportKind.stdio };
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ language: "sage" }],
    synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/{*.sg,grove.toml}") },
  };
  client = new LanguageClient("sage", "Sage language server", serverOptions(), clientOptions);
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("sage.path") && client) {
        await client.stop();
        client = new LanguageClient("sage", "Sage language server", serverOptions(), clientOptions);
        await client.start();
      }
    }),
  );
  try {
    await client.start();
  } catch (error) {
    vscode.window.showErrorMessage(
      `Sage: could not start \`${serverOptions().command} lsp\` (set "sage.path"): ${String(error)}`,
    );
  }
}

export async function deactivate(): Promise<void> {
  if (client) {
    await client.stop();
  }
}
