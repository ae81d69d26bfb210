/**
 * The budgetlens VS Code extension: starts the budgetlens language server and adds the editor
 * commands and the status bar item. Everything worth testing without VS Code lives in the pure
 * modules (serverCommand, cutMarker, status, settings).
 */
import * as cp from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  type CodeLens as LspCodeLens,
  CodeLensRequest,
  CodeLensResolveRequest,
  DidChangeConfigurationNotification,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  TransportKind,
} from 'vscode-languageclient/node';

import { cutMarkerRange } from './cutMarker';
import {
  findOnPath,
  type ProbeResult,
  type ProcessSpec,
  resolveServer,
  serverCandidates,
} from './serverCommand';
import { serverSettings } from './settings';
import { parsePromptLensTitle, statusBarText } from './status';

const SECTION = 'budgetlens';
const DEFAULT_CUT_MARKER = '<<<CUT>>>';
const VIEW_SCHEME = 'budgetlens-view';

/** Server commands (`workspace/executeCommand`); the client's own ids live under `budgetlens.client.`. */
const SERVER = {
  showHierarchyContext: 'budgetlens.showHierarchyContext',
  clampAll: 'budgetlens.clampAll',
  showBudgetReport: 'budgetlens.showBudgetReport',
} as const;

interface HierarchyResult {
  text: string;
  cut: { line: number; character: number; path?: string } | null;
  error?: { line: number; character: number; message: string; path?: string } | null;
  marker?: string;
  description?: string;
  budget?: number;
  jsonParsingSuccess?: boolean;
}

let client: LanguageClient | undefined;
let starting: Promise<void> | undefined;
let output: vscode.OutputChannel;
let statusItem: vscode.StatusBarItem;
const views = new Map<string, string>();
const viewChanged = new vscode.EventEmitter<vscode.Uri>();
let viewCounter = 0;
let cutDecoration: vscode.TextEditorDecorationType;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel('budgetlens');
  statusItem = vscode.window.createStatusBarItem('budgetlens.tokens', vscode.StatusBarAlignment.Right, 100);
  statusItem.name = 'budgetlens prompt tokens';
  cutDecoration = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor('editor.findMatchHighlightBackground'),
    border: '1px solid',
    borderColor: new vscode.ThemeColor('editorError.foreground'),
    overviewRulerColor: new vscode.ThemeColor('editorError.foreground'),
    overviewRulerLane: vscode.OverviewRulerLane.Full,
    after: { contentText: '  ← cut point', color: new vscode.ThemeColor('editorError.foreground') },
  });

  context.subscriptions.push(
    output,
    statusItem,
    cutDecoration,
    viewChanged,
    vscode.workspace.registerTextDocumentContentProvider(VIEW_SCHEME, {
      onDidChange: viewChanged.event,
      provideTextDocumentContent: (uri) => views.get(uri.toString()) ?? '',
    }),
    vscode.commands.registerCommand('budgetlens.client.showHierarchyContext', showHierarchyContext),
    vscode.commands.registerCommand('budgetlens.client.clampAll', clampAll),
    vscode.commands.registerCommand('budgetlens.client.showBudgetReport', showBudgetReport),
    vscode.commands.registerCommand('budgetlens.client.restartServer', restartServer),
    vscode.window.onDidChangeActiveTextEditor(() => scheduleStatus(0)),
    vscode.workspace.onDidSaveTextDocument(() => scheduleStatus(0)),
    // a prompt edit changes its count: diagnostics follow every re-check, so refresh after them
    vscode.languages.onDidChangeDiagnostics(() => scheduleStatus(300)),
    { dispose: () => clearTimeout(statusTimer) },
    vscode.workspace.onDidChangeConfiguration(onConfigurationChanged),
    vscode.workspace.onDidCloseTextDocument((doc) => {
      if (doc.uri.scheme === VIEW_SCHEME) {
        views.delete(doc.uri.toString());
      }
    }),
    { dispose: () => void client?.stop() },
  );

  if (await workspaceHasConfig()) {
    // not awaited: activation stays quick while the server is found and initialized
    void startServer();
    return;
  }
  output.appendLine('No config.json in this workspace: the server starts when one appears.');
  const watcher = vscode.workspace.createFileSystemWatcher('**/config.json', false, true, true);
  context.subscriptions.push(
    watcher,
    watcher.onDidCreate(() => {
      if (!client) {
        void startServer();
      }
    }),
  );
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}

async function workspaceHasConfig(): Promise<boolean> {
  const found = await vscode.workspace.findFiles('**/config.json', '**/node_modules/**', 1);
  return found.length > 0;
}

// ---------------------------------------------------------------- starting the server

function probe(spec: ProcessSpec): Promise<ProbeResult> {
  return new Promise((resolve) => {
    cp.execFile(spec.command, [...spec.args], { timeout: 20000, windowsHide: true }, (error, _out, err) => {
      if (!error) {
        resolve({ ok: true });
        return;
      }
      const lastLine = String(err).trim().split(/\r?\n/).pop() ?? '';
      const code = (error as NodeJS.ErrnoException).code;
      const detail = code === 'ENOENT' ? 'not found' : lastLine || error.message;
      resolve({ ok: false, detail });
    });
  });
}

function isExecutableFile(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

interface PythonExtensionApi {
  settings?: { getExecutionDetails?(resource?: vscode.Uri): { execCommand: string[] | undefined } };
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(p: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
  };
}

/** The Python extension's active interpreter as an argv prefix, when that extension is there. */
async function pythonExtensionInterpreter(): Promise<string[] | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
  if (!ext) {
    return undefined;
  }
  try {
    const api = ext.isActive ? ext.exports : await ext.activate();
    const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
    if (api?.environments) {
      const active = api.environments.getActiveEnvironmentPath(resource);
      const env = await api.environments.resolveEnvironment(active);
      const exe = env?.executable.uri?.fsPath;
      if (exe) {
        return [exe];
      }
    }
    const details = api?.settings?.getExecutionDetails?.(resource);
    return details?.execCommand && details.execCommand.length > 0 ? details.execCommand : undefined;
  } catch (error) {
    output.appendLine(`The Python extension's interpreter could not be read: ${String(error)}`);
    return undefined;
  }
}

function currentServerSettings(): Record<string, unknown> {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const section: Record<string, unknown> = {};
  for (const key of Object.keys(cfg)) {
    const value: unknown = cfg.get(key);
    if (typeof value !== 'function') {
      section[key] = value;
    }
  }
  return serverSettings(section);
}

async function startServer(): Promise<void> {
  if (starting) {
    return starting;
  }
  starting = doStart().finally(() => {
    starting = undefined;
  });
  return starting;
}

async function doStart(): Promise<void> {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const list = serverCandidates(
    { command: cfg.get('server.command'), interpreter: cfg.get('server.interpreter') },
    await pythonExtensionInterpreter(),
    (name) => findOnPath(name, process.env.PATH, isExecutableFile, process.platform, process.env.PATHEXT),
  );
  const resolution = await resolveServer(list, probe);
  for (const attempt of resolution.attempts) {
    output.appendLine(
      `server candidate: ${attempt.candidate.label}: ${attempt.result.ok ? 'ok' : attempt.result.detail ?? 'failed'}`,
    );
  }
  if (!resolution.ok) {
    output.appendLine(resolution.message);
    void vscode.window
      .showErrorMessage(resolution.message, 'Open Settings', 'Show Output')
      .then((choice) => {
        if (choice === 'Open Settings') {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'budgetlens.server');
        } else if (choice === 'Show Output') {
          output.show();
        }
      });
    return;
  }
  const run = resolution.candidate.run;
  output.appendLine(`starting: ${[run.command, ...run.args].join(' ')}`);
  const serverOptions: ServerOptions = {
    command: run.command,
    args: [...run.args],
    transport: TransportKind.stdio,
    options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'yaml' },
      { scheme: 'file', language: 'json' },
      { scheme: 'file', pattern: '**/*.txt' },
      // prompt files in their own formats (*.prompt.yml is yaml above); alongside any
      // extension that owns these file types
      { scheme: 'file', pattern: '**/*.{prompty,prompt}' },
    ],
    // displaysCommandResults: this client shows the results of showHierarchyContext and
    // showBudgetReport itself (executeCommand middleware), so the server does not open a view
    initializationOptions: { ...currentServerSettings(), displaysCommandResults: true },
    outputChannel: output,
    synchronize: {
      fileEvents: vscode.workspace.createFileSystemWatcher('**/*.{yaml,yml,json,txt,prompty,prompt}'),
    },
    middleware: {
      // Server commands also arrive from code lenses and code actions (vscode-languageclient
      // registers them and forwards them to the server): show what they return.
      executeCommand: async (command, args, next) => {
        const result: unknown = await next(command, args);
        await presentCommandResult(command, args, result);
        return result;
      },
      workspace: {
        // vscode-languageclient would send the whole `budgetlens` section (with the client-only
        // `server.*` keys, which the server reports as unknown). onConfigurationChanged sends
        // the filtered section instead, so this path sends nothing.
        didChangeConfiguration: () => Promise.resolve(),
        // Answer workspace/configuration for our section without the client-only `server.*` keys.
        configuration: async (params, token, next) => {
          const result = await next(params, token);
          if (!Array.isArray(result)) {
            return result;
          }
          return result.map((value: unknown, i: number) => {
            const section = params.items[i]?.section;
            const isOurs = section === SECTION || section === undefined;
            return isOurs && value && typeof value === 'object' && !Array.isArray(value)
              ? serverSettings(value as Record<string, unknown>)
              : value;
          });
        },
      },
    },
  };
  const lc = new LanguageClient('budgetlens', 'budgetlens', serverOptions, clientOptions);
  lc.onDidChangeState((event) => {
    if (event.newState === State.Stopped) {
      statusItem.hide();
    }
  });
  try {
    await lc.start();
    client = lc;
    void updateStatus();
  } catch (error) {
    const message =
      `budgetlens: the language server (${[run.command, ...run.args].join(' ')}) did not start: ` +
      `${String(error)}. See the "budgetlens" output for its log.`;
    output.appendLine(message);
    void vscode.window.showErrorMessage(message, 'Show Output').then((c) => c && output.show());
  }
}

async function restartServer(): Promise<void> {
  const old = client;
  client = undefined;
  if (old) {
    try {
      await old.stop();
    } catch (error) {
      output.appendLine(`stopping the server: ${String(error)}`);
    }
  }
  await startServer();
  if (client) {
    void vscode.window.setStatusBarMessage('budgetlens: server restarted', 3000);
  }
}

function onConfigurationChanged(event: vscode.ConfigurationChangeEvent): void {
  if (!event.affectsConfiguration(SECTION)) {
    return;
  }
  if (event.affectsConfiguration(`${SECTION}.server`)) {
    void restartServer();
    return;
  }
  if (client?.isRunning()) {
    void client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { [SECTION]: currentServerSettings() },
    });
  }
}

// ---------------------------------------------------------------- commands

function runningClient(): LanguageClient | undefined {
  if (client?.isRunning()) {
    return client;
  }
  void vscode.window.showWarningMessage(
    'budgetlens: the language server is not running. Run "budgetlens: Restart Server", or see the "budgetlens" output.',
  );
  return undefined;
}

/**
 * Runs a server command through the command vscode-languageclient registered for it, so the
 * result goes through the executeCommand middleware (which shows it) like a lens click does.
 */
async function runServerCommand(command: string, arg: Record<string, unknown>, what: string): Promise<void> {
  try {
    await vscode.commands.executeCommand(command, arg);
  } catch (error) {
    void vscode.window.showErrorMessage(`budgetlens: ${what} failed: ${errorText(error)}`);
  }
}

function targetEditor(kind: string): vscode.TextEditor | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.scheme !== 'file') {
    void vscode.window.showInformationMessage(`budgetlens: open ${kind} first.`);
    return undefined;
  }
  return editor;
}

/** Opens `text` beside the active editor as a read-only document. */
async function openView(title: string, text: string, languageId: string): Promise<vscode.TextEditor> {
  viewCounter += 1;
  const uri = vscode.Uri.from({ scheme: VIEW_SCHEME, path: `/${title}`, query: String(viewCounter) });
  views.set(uri.toString(), text);
  viewChanged.fire(uri);
  let doc = await vscode.workspace.openTextDocument(uri);
  if (doc.languageId !== languageId) {
    doc = await vscode.languages.setTextDocumentLanguage(doc, languageId);
  }
  return vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: false });
}

function uriArgument(args: unknown[]): string | undefined {
  const first = args[0];
  if (typeof first === 'string') {
    return first;
  }
  if (first && typeof first === 'object' && typeof (first as { uri?: unknown }).uri === 'string') {
    return (first as { uri: string }).uri;
  }
  return undefined;
}

function baseName(uri: string | undefined): string {
  if (!uri) {
    return 'document';
  }
  try {
    return path.posix.basename(vscode.Uri.parse(uri).path);
  } catch {
    return uri;
  }
}

async function presentCommandResult(command: string, args: unknown[], result: unknown): Promise<void> {
  try {
    if (command === SERVER.showHierarchyContext) {
      await showHierarchyResult(baseName(uriArgument(args)), result as HierarchyResult | null);
    } else if (command === SERVER.showBudgetReport) {
      const text = describeResult(result);
      await openView(`${baseName(uriArgument(args))} (budget report)`, text || 'No report.', 'plaintext');
    } else if (command === SERVER.clampAll) {
      const message = describeResult(result);
      void vscode.window.showInformationMessage(`budgetlens: ${message || 'budgets clamped.'}`);
    }
  } catch (error) {
    output.appendLine(`showing the result of ${command}: ${errorText(error)}`);
  }
}

async function showHierarchyResult(name: string, result: HierarchyResult | null): Promise<void> {
  if (!result || typeof result.text !== 'string') {
    void vscode.window.showErrorMessage('budgetlens: Show Hierarchy Context returned no text.');
    return;
  }
  if (!result.cut && !result.error && result.text === '') {
    void vscode.window.showInformationMessage(`budgetlens: ${name} is complete JSON; nothing was cut.`);
    return;
  }
  const view = await openView(`${name} (hierarchy context)`, result.text, 'plaintext');
  const marker = result.marker || vscode.workspace.getConfiguration(SECTION).get<string>('cutMarker') || DEFAULT_CUT_MARKER;
  const found = cutMarkerRange(result.text, marker);
  if (!found) {
    output.appendLine(`The cut marker ${JSON.stringify(marker)} is not in the hierarchy context of ${name}.`);
    return;
  }
  const where = result.cut?.path ?? result.error?.path;
  const range = new vscode.Range(found.start.line, found.start.character, found.end.line, found.end.character);
  view.setDecorations(cutDecoration, [
    { range, hoverMessage: result.description ?? `Cut point${where ? ` at ${where}` : ''}` },
  ]);
  view.selection = new vscode.Selection(range.start, range.start);
  view.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}

async function showHierarchyContext(arg?: { budget?: number } | number): Promise<void> {
  const lc = runningClient();
  const editor = targetEditor('a JSON file');
  if (!lc || !editor) {
    return;
  }
  const budget = typeof arg === 'number' ? arg : arg?.budget;
  const request: Record<string, unknown> = { uri: lc.code2ProtocolConverter.asUri(editor.document.uri) };
  if (budget !== undefined) {
    request.budget = budget;
  }
  await runServerCommand(SERVER.showHierarchyContext, request, 'Show Hierarchy Context');
}

async function clampAll(): Promise<void> {
  const lc = runningClient();
  const editor = targetEditor('a pipeline YAML file');
  if (!lc || !editor) {
    return;
  }
  await runServerCommand(SERVER.clampAll, { uri: lc.code2ProtocolConverter.asUri(editor.document.uri) }, 'Clamp All Budgets');
}

async function showBudgetReport(): Promise<void> {
  const lc = runningClient();
  const editor = targetEditor('a pipeline, prompt or config file');
  if (!lc || !editor) {
    return;
  }
  await runServerCommand(SERVER.showBudgetReport, { uri: lc.code2ProtocolConverter.asUri(editor.document.uri) }, 'Show Budget Report');
}

function describeResult(result: unknown): string {
  if (typeof result === 'string') {
    return result;
  }
  if (result && typeof result === 'object') {
    const r = result as Record<string, unknown>;
    for (const key of ['text', 'message', 'summary']) {
      if (typeof r[key] === 'string') {
        return r[key];
      }
    }
    return JSON.stringify(result, null, 2);
  }
  return '';
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------- status bar

let statusSeq = 0;
let statusTimer: ReturnType<typeof setTimeout> | undefined;

/** Coalesces bursts of events (diagnostics change on every re-check) into one lens request. */
function scheduleStatus(delayMs: number): void {
  clearTimeout(statusTimer);
  statusTimer = setTimeout(() => void updateStatus(), delayMs);
}

/** Shows the active prompt file's token count and tokenizer, from the server's prompt lens. */
async function updateStatus(): Promise<void> {
  const seq = ++statusSeq;
  const editor = vscode.window.activeTextEditor;
  const lc = client;
  if (!lc?.isRunning() || !editor || editor.document.uri.scheme !== 'file' || !editor.document.fileName.endsWith('.txt')) {
    statusItem.hide();
    return;
  }
  try {
    const uri = lc.code2ProtocolConverter.asUri(editor.document.uri);
    const lenses = (await lc.sendRequest(CodeLensRequest.type, { textDocument: { uri } })) ?? [];
    let info = null;
    for (const lens of lenses.filter((l) => l.range.start.line === 0)) {
      const resolved: LspCodeLens = lens.command ? lens : await lc.sendRequest(CodeLensResolveRequest.type, lens);
      info = resolved.command ? parsePromptLensTitle(resolved.command.title) : null;
      if (info) {
        break;
      }
    }
    if (seq !== statusSeq) {
      return;
    }
    if (!info) {
      statusItem.hide();
      return;
    }
    statusItem.text = `$(symbol-numeric) ${statusBarText(info)}`;
    statusItem.tooltip = `budgetlens: ${statusBarText(info)} in ${path.basename(editor.document.fileName)}`;
    statusItem.show();
  } catch (error) {
    output.appendLine(`status bar: ${errorText(error)}`);
    statusItem.hide();
  }
}
