// Every page of the app: its path, its module (loaded when first opened, so the first page
// downloads only what it shows), whether it needs a signed-in person, and its nav section.
export const routes = [
  { path: "/", section: "overview", load: () => import("./overview/page.js") },
  { path: "/login", public: true, load: () => import("./auth/login.js") },
  { path: "/setup", public: true, load: () => import("./auth/setup.js") },
  { path: "/invite", public: true, load: () => import("./auth/invite.js") },
  { path: "/profile", section: "profile", load: () => import("./auth/profile.js") },
  { path: "/errors", section: "errors", load: () => import("./errors/list.js") },
  { path: "/errors/:id", section: "errors", load: () => import("./errors/group.js") },
  { path: "/sessions", section: "sessions", load: () => import("./sessions/list.js") },
  { path: "/sessions/:id", section: "sessions", load: () => import("./sessions/detail.js") },
  // Records the product links to (webhook payloads) whose full pages come with the operations UI.
  { path: "/alerts/:id", section: "alerts", kind: "alert", load: () => import("./records/page.js") },
  { path: "/incidents/:id", section: "incidents", kind: "incident", load: () => import("./records/page.js") },
  { path: "/deployments/:id", section: "deployments", kind: "deployment", load: () => import("./records/page.js") },
  { path: "/channels/:id", section: "settings", kind: "channel", load: () => import("./records/page.js") },
  { path: "/agents/:id", section: "agents", kind: "agent", load: () => import("./records/page.js") },
];
